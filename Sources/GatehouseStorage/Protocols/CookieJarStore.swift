import GatehouseCore

/// Where members' cookie jars live, one per gateway session.
public protocol CookieJarStore: Sendable {
    func load(sessionID: String) async throws -> CookieJar?
    /// Applies `change` to the stored jar (an empty one if there is none) and saves it if it changed, as one step
    /// that no other writer of the same jar interleaves with (on PostgreSQL: no other replica either). Returns the
    /// jar as stored.
    @discardableResult
    func modify(sessionID: String, _ change: @Sendable @escaping (inout CookieJar) -> Void) async throws -> CookieJar
    func delete(sessionID: String) async throws
}
