import Foundation
import PostgresNIO

public struct PostgresCookieJarStore: CookieJarStore {
    let database: PostgresDatabase

    public init(database: PostgresDatabase) { self.database = database }

    public func load(sessionID: String) async throws -> CookieJar? {
        try await database.body(CookieJar.self, "SELECT body FROM cookie_jars WHERE session_id = \(sessionID)")
    }

    public func save(_ jar: CookieJar, sessionID: String) async throws {
        let body = try RowCoding.encode(jar)
        try await database.query(
            """
            INSERT INTO cookie_jars (session_id, body, updated_at) VALUES (\(sessionID), \(body), \(Date()))
            ON CONFLICT (session_id) DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at
            """)
    }

    public func delete(sessionID: String) async throws {
        try await database.query("DELETE FROM cookie_jars WHERE session_id = \(sessionID)")
    }
}
