import Foundation

/// Where sessions live; one implementation per storage backend.
public protocol SessionStore: Sendable {
    func insert(_ session: Session) async throws
    func find(id: String) async throws -> Session?
    /// Replaces the stored session with the same id (tokens, level, last seen).
    func update(_ session: Session) async throws
    func delete(id: String) async throws
    /// Removes sessions past their absolute expiry or idle for longer than `idleCutoff` allows; returns how many.
    @discardableResult func deleteExpired(now: Date, idleCutoff: Date) async throws -> Int
}
