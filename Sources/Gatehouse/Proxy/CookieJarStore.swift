/// Where members' cookie jars live, one per gateway session.
public protocol CookieJarStore: Sendable {
    func load(sessionID: String) async throws -> CookieJar?
    func save(_ jar: CookieJar, sessionID: String) async throws
    func delete(sessionID: String) async throws
}
