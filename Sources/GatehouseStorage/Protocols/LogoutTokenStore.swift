import Foundation

/// The back-channel logout tokens already honoured, by issuer and `jti`, kept until they could no longer be
/// presented: a replayed token is refused (shared by every replica).
public protocol LogoutTokenStore: Sendable {
    /// Records the token; `false` when it was recorded before (a replay).
    func remember(issuer: String, tokenID: String, until: Date) async throws -> Bool
    /// Takes a record back, when the logout it was recorded for could not be carried out (the provider may retry).
    func forget(issuer: String, tokenID: String) async throws
    @discardableResult func deleteExpired(now: Date) async throws -> Int
}
