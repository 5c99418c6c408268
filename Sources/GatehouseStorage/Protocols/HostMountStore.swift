import Foundation

/// A one-time code that carries a member's session from the gateway's host to a host-mounted app's host.
public struct AppHandoff: Sendable, Codable, Equatable {
    public var codeHash: String
    public var sessionID: String
    public var slug: String
    /// SHA-256 of the state cookie the app host set in this browser before sending it to the gateway.
    public var stateHash: String
    public var returnTo: String
    public var expiresAt: Date

    public static let lifetime: TimeInterval = 60

    public init(codeHash: String, sessionID: String, slug: String, stateHash: String, returnTo: String, expiresAt: Date) {
        self.codeHash = codeHash
        self.sessionID = sessionID
        self.slug = slug
        self.stateHash = stateHash
        self.returnTo = returnTo
        self.expiresAt = expiresAt
    }
}

/// Handoff codes and the per-app-host grants they turn into; both end with the session.
public protocol HostMountStore: Sendable {
    func insert(_ handoff: AppHandoff) async throws
    /// Removes and returns the handoff: a code works once.
    func takeHandoff(codeHash: String) async throws -> AppHandoff?
    func insertGrant(tokenHash: String, sessionID: String, slug: String) async throws
    /// The session a grant token belongs to, for this app only.
    func sessionID(grantTokenHash: String, slug: String) async throws -> String?
    /// The apps whose hosts the session was let into (its grants), in slug order.
    func grantedSlugs(sessionID: String) async throws -> [String]
    @discardableResult func deleteExpiredHandoffs(now: Date) async throws -> Int
}
