import Foundation
import PostgresNIO

/// Every write tells the other replicas at its commit (the `apps` table's trigger notifies `StateInvalidationListener`'s
/// channel), so that each applies the catalog within a second.
public struct PostgresAppCatalogStore: AppCatalogStore {
    let database: PostgresDatabase

    public init(database: PostgresDatabase) { self.database = database }

    static let columns = "slug, entry, enabled, version, changed_by, changed_at"

    public func apps() async throws -> [StoredApp] {
        try Self.apps(await database.query(PostgresQuery(unsafeSQL: "SELECT \(Self.columns) FROM apps ORDER BY created_at, slug")))
    }

    public func app(_ slug: String) async throws -> StoredApp? {
        var bindings = PostgresBindings()
        bindings.append(slug)
        return try Self.apps(await database.query(PostgresQuery(unsafeSQL: "SELECT \(Self.columns) FROM apps WHERE slug = $1", binds: bindings))).first
    }

    public func save(_ app: StoredApp, expectedVersion: Int?) async throws -> StoredApp? {
        var bindings = PostgresBindings()
        bindings.append(app.slug)
        bindings.append(app.entry)
        bindings.append(app.enabled)
        bindings.append(app.changedBy)
        let sql: String
        if let expectedVersion {
            bindings.append(expectedVersion)
            sql = """
                UPDATE apps SET entry = $2, enabled = $3, version = version + 1, changed_by = $4, changed_at = now()
                WHERE slug = $1 AND version = $5 RETURNING \(Self.columns)
                """
        } else {
            sql = """
                INSERT INTO apps (slug, entry, enabled, version, changed_by, changed_at, created_at) VALUES ($1, $2, $3, 1, $4, now(), now())
                ON CONFLICT (slug) DO NOTHING RETURNING \(Self.columns)
                """
        }
        return try Self.apps(await database.query(PostgresQuery(unsafeSQL: sql, binds: bindings))).first
    }

    public func remove(_ slug: String, expectedVersion: Int) async throws -> Bool {
        try await !database.query("DELETE FROM apps WHERE slug = \(slug) AND version = \(expectedVersion) RETURNING slug").isEmpty
    }

    static func apps(_ rows: [PostgresRow]) throws -> [StoredApp] {
        try rows.map { row in
            let (slug, entry, enabled, version, changedBy, changedAt) = try PostgresDatabase.decoding {
                try row.decode((String, String, Bool, Int, String, Date).self)
            }
            return StoredApp(slug: slug, entry: entry, enabled: enabled, version: version, changedBy: changedBy, changedAt: changedAt)
        }
    }
}
