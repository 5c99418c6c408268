import Foundation
import GatehouseCore
import SQLiteNIO

public struct SQLiteCookieJarStore: CookieJarStore {
    let database: SQLiteDatabase
    let keyring: StorageKeyring

    public init(database: SQLiteDatabase, keyring: StorageKeyring) {
        self.database = database
        self.keyring = keyring
    }

    public func load(sessionID: String) async throws -> CookieJar? {
        guard let row = try await database.query("SELECT body FROM cookie_jars WHERE session_id = ?", [.text(sessionID)]).first else {
            return nil
        }
        guard let body = row.column("body")?.string else { throw StorageError.corrupt("cookie jar row") }
        return try SealedColumn.jars.open(CookieJar.self, body, key: sessionID, with: keyring)
    }

    /// Read, change and write are three steps on the shared connection; `SharedCookieJars` lines up the changes to
    /// one jar, and no other process writes an SQLite store.
    public func modify(sessionID: String, _ change: @Sendable @escaping (inout CookieJar) -> Void) async throws -> CookieJar {
        let before = try await load(sessionID: sessionID) ?? CookieJar()
        var jar = before
        change(&jar)
        if jar != before { try await save(jar, sessionID: sessionID) }
        return jar
    }

    func save(_ jar: CookieJar, sessionID: String) async throws {
        try await database.query(
            """
            INSERT INTO cookie_jars (session_id, body, updated_at) VALUES (?, ?, ?)
            ON CONFLICT(session_id) DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at
            """,
            [.text(sessionID), .text(try SealedColumn.jars.seal(jar, key: sessionID, with: keyring)), .time(Date())]
        )
    }

    public func delete(sessionID: String) async throws {
        try await database.query("DELETE FROM cookie_jars WHERE session_id = ?", [.text(sessionID)])
    }
}
