import Foundation
import GatehouseCore
import PostgresNIO

public struct PostgresCookieJarStore: CookieJarStore {
    let database: PostgresDatabase
    let keyring: StorageKeyring

    public init(database: PostgresDatabase, keyring: StorageKeyring) {
        self.database = database
        self.keyring = keyring
    }

    public func load(sessionID: String) async throws -> CookieJar? {
        try await database.sealedBody(CookieJar.self, .jars, key: sessionID, keyring, "SELECT body FROM cookie_jars WHERE session_id = \(sessionID)")
    }

    /// One transaction holding the jar's advisory lock: changes from two replicas to one jar line up instead of
    /// overwriting each other (a row lock would not cover a jar that does not exist yet).
    public func modify(sessionID: String, _ change: @Sendable @escaping (inout CookieJar) -> Void) async throws -> CookieJar {
        try await database.transaction { transaction in
            try await transaction.query("SELECT pg_advisory_xact_lock(\(Self.jarLockClass), hashtext(\(sessionID)))")
            let row = try await transaction.query("SELECT body FROM cookie_jars WHERE session_id = \(sessionID)").first
            let before = try row.map { row in
                try SealedColumn.jars.open(CookieJar.self, PostgresDatabase.decoding { try row.decode(String.self) }, key: sessionID, with: keyring)
            }
            var jar = before ?? CookieJar()
            change(&jar)
            if jar != before {
                let body = try SealedColumn.jars.seal(jar, key: sessionID, with: keyring)
                try await transaction.query(
                    """
                    INSERT INTO cookie_jars (session_id, body, updated_at) VALUES (\(sessionID), \(body), \(Date()))
                    ON CONFLICT (session_id) DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at
                    """)
            }
            return jar
        }
    }

    static let jarLockClass: Int32 = 4

    public func delete(sessionID: String) async throws {
        try await database.query("DELETE FROM cookie_jars WHERE session_id = \(sessionID)")
    }
}
