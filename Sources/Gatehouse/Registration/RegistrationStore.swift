import Foundation

/// Registration state per SSO subject: whoever finished the upgrade flow is `registered` at every later sign-in.
public protocol RegistrationStore: Sendable {
    func isRegistered(sub: String) async throws -> Bool
    func markRegistered(sub: String, username: String, at: Date) async throws
}
