import Foundation
import SQLiteNIO

public struct SQLiteCookieJarStore: CookieJarStore {
    let database: SQLiteDatabase

    public init(database: SQLiteDatabase) { self.database = database }

    public func load(sessionID: String) async throws -> CookieJar? {
        guard let row = try await database.query("SELECT body FROM cookie_jars WHERE session_id = ?", [.text(sessionID)]).first else {
            return nil
        }
        return try RowCoding.decode(CookieJar.self, from: row)
    }

    public func save(_ jar: CookieJar, sessionID: String) async throws {
        try await database.query(
            """
            INSERT INTO cookie_jars (session_id, body, updated_at) VALUES (?, ?, ?)
            ON CONFLICT(session_id) DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at
            """,
            [.text(sessionID), .text(try RowCoding.encode(jar)), .time(Date())]
        )
    }

    public func delete(sessionID: String) async throws {
        try await database.query("DELETE FROM cookie_jars WHERE session_id = ?", [.text(sessionID)])
    }
}
