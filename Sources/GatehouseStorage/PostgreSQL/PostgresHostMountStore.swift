import Foundation
import PostgresNIO

public struct PostgresHostMountStore: HostMountStore {
    let database: PostgresDatabase

    public init(database: PostgresDatabase) { self.database = database }

    public func insert(_ handoff: AppHandoff) async throws {
        let body = try RowCoding.encode(handoff)
        try await database.query(
            """
            INSERT INTO app_handoffs (code_hash, session_id, body, expires_at)
            VALUES (\(handoff.codeHash), \(handoff.sessionID), \(body), \(handoff.expiresAt))
            """)
    }

    public func takeHandoff(codeHash: String) async throws -> AppHandoff? {
        try await database.body(AppHandoff.self, "DELETE FROM app_handoffs WHERE code_hash = \(codeHash) RETURNING body")
    }

    public func insertGrant(tokenHash: String, sessionID: String, slug: String) async throws {
        try await database.query(
            "INSERT INTO app_grants (token_hash, session_id, slug, created_at) VALUES (\(tokenHash), \(sessionID), \(slug), \(Date()))")
    }

    public func sessionID(grantTokenHash: String, slug: String) async throws -> String? {
        guard let row = try await database.query("SELECT session_id FROM app_grants WHERE token_hash = \(grantTokenHash) AND slug = \(slug)").first
        else { return nil }
        return try PostgresDatabase.decoding { try row.decode(String.self) }
    }

    public func grantedSlugs(sessionID: String) async throws -> [String] {
        try await database.query("SELECT DISTINCT slug FROM app_grants WHERE session_id = \(sessionID) ORDER BY slug").map { row in
            try PostgresDatabase.decoding { try row.decode(String.self) }
        }
    }

    public func deleteExpiredHandoffs(now: Date) async throws -> Int {
        try await database.query("DELETE FROM app_handoffs WHERE expires_at <= \(now) RETURNING code_hash").count
    }
}
