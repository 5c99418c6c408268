import Foundation
import SQLiteNIO

public struct SQLiteHostMountStore: HostMountStore {
    let database: SQLiteDatabase

    public init(database: SQLiteDatabase) { self.database = database }

    public func insert(_ handoff: AppHandoff) async throws {
        try await database.query(
            "INSERT INTO app_handoffs (code_hash, session_id, body, expires_at) VALUES (?, ?, ?, ?)",
            [.text(handoff.codeHash), .text(handoff.sessionID), .text(try RowCoding.encode(handoff)), .time(handoff.expiresAt)]
        )
    }

    public func takeHandoff(codeHash: String) async throws -> AppHandoff? {
        guard let row = try await database.query("DELETE FROM app_handoffs WHERE code_hash = ? RETURNING body", [.text(codeHash)]).first else {
            return nil
        }
        return try RowCoding.decode(AppHandoff.self, from: row)
    }

    public func insertGrant(tokenHash: String, sessionID: String, slug: String) async throws {
        try await database.query(
            "INSERT INTO app_grants (token_hash, session_id, slug, created_at) VALUES (?, ?, ?, ?)",
            [.text(tokenHash), .text(sessionID), .text(slug), .time(Date())]
        )
    }

    public func sessionID(grantTokenHash: String, slug: String) async throws -> String? {
        try await database.query("SELECT session_id FROM app_grants WHERE token_hash = ? AND slug = ?", [.text(grantTokenHash), .text(slug)])
            .first?.column("session_id")?.string
    }

    public func grantedSlugs(sessionID: String) async throws -> [String] {
        try await database.query("SELECT DISTINCT slug FROM app_grants WHERE session_id = ? ORDER BY slug", [.text(sessionID)])
            .compactMap { $0.column("slug")?.string }
    }

    public func deleteExpiredHandoffs(now: Date) async throws -> Int {
        try await database.query("DELETE FROM app_handoffs WHERE expires_at <= ? RETURNING code_hash", [.time(now)]).count
    }
}
