import Foundation
import SQLiteNIO

public struct SQLiteAppCatalogStore: AppCatalogStore {
    let database: SQLiteDatabase

    public init(database: SQLiteDatabase) { self.database = database }

    public func apps() async throws -> [StoredApp] {
        try await database.query("SELECT * FROM apps ORDER BY created_at, slug").compactMap(Self.app)
    }

    public func app(_ slug: String) async throws -> StoredApp? {
        try await database.query("SELECT * FROM apps WHERE slug = ?", [.text(slug)]).first.flatMap(Self.app)
    }

    public func save(_ app: StoredApp, expectedVersion: Int?) async throws -> StoredApp? {
        let now = Date()
        let rows: [SQLiteRow]
        if let expectedVersion {
            rows = try await database.query(
                """
                UPDATE apps SET entry = ?, enabled = ?, version = version + 1, changed_by = ?, changed_at = ?
                WHERE slug = ? AND version = ? RETURNING *
                """,
                [.text(app.entry), .integer(app.enabled ? 1 : 0), .text(app.changedBy), .time(now), .text(app.slug), .integer(expectedVersion)])
        } else {
            rows = try await database.query(
                """
                INSERT INTO apps (slug, entry, enabled, version, changed_by, changed_at, created_at) VALUES (?, ?, ?, 1, ?, ?, ?)
                ON CONFLICT (slug) DO NOTHING RETURNING *
                """,
                [.text(app.slug), .text(app.entry), .integer(app.enabled ? 1 : 0), .text(app.changedBy), .time(now), .time(now)])
        }
        return rows.first.flatMap(Self.app)
    }

    public func remove(_ slug: String, expectedVersion: Int) async throws -> Bool {
        try await !database.query("DELETE FROM apps WHERE slug = ? AND version = ? RETURNING slug", [.text(slug), .integer(expectedVersion)]).isEmpty
    }

    static func app(_ row: SQLiteRow) -> StoredApp? {
        guard let slug = row.column("slug")?.string, let entry = row.column("entry")?.string, let version = row.column("version")?.integer
        else { return nil }
        return StoredApp(
            slug: slug, entry: entry, enabled: row.column("enabled")?.integer == 1, version: version,
            changedBy: row.column("changed_by")?.string ?? "", changedAt: Date(timeIntervalSince1970: row.column("changed_at")?.double ?? 0))
    }
}
