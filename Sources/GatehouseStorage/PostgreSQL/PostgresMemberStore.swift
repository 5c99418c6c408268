import Foundation
import PostgresNIO

public struct PostgresMemberStore: MemberStore {
    let database: PostgresDatabase
    let keyring: StorageKeyring

    public init(database: PostgresDatabase, keyring: StorageKeyring) {
        self.database = database
        self.keyring = keyring
    }

    public func signedIn(account: String, name: String?, at: Date) async throws {
        let sealed = try name.map { try SealedColumn.memberNames.seal($0, key: account, with: keyring) }
        try await database.query(
            """
            INSERT INTO members (account, name, recent_apps, seen_at) VALUES (\(account), \(sealed), '', \(at))
            ON CONFLICT (account) DO UPDATE SET name = COALESCE(EXCLUDED.name, members.name), seen_at = EXCLUDED.seen_at
            """)
    }

    public func recentApps(account: String) async throws -> [String] {
        let rows = try await database.query("SELECT recent_apps FROM members WHERE account = \(account)")
        return RecentAppsColumn.decode(try rows.first.map { row in try PostgresDatabase.decoding { try row.decode(String.self) } })
    }

    public func setRecentApps(_ slugs: [String], account: String, at: Date) async throws {
        let text = RecentAppsColumn.encode(slugs)
        try await database.query(
            """
            INSERT INTO members (account, recent_apps, seen_at) VALUES (\(account), \(text), \(at))
            ON CONFLICT (account) DO UPDATE SET recent_apps = EXCLUDED.recent_apps, seen_at = EXCLUDED.seen_at
            """)
    }

    public func names(accounts: [String]) async throws -> [String: MemberName] {
        guard !accounts.isEmpty else { return [:] }
        let rows = try await database.query(
            """
            SELECT a.account, m.name, r.username FROM unnest(\(accounts)::text[]) AS a(account)
            LEFT JOIN members m ON m.account = a.account LEFT JOIN registrations r ON r.sub = a.account
            WHERE m.account IS NOT NULL OR r.sub IS NOT NULL
            """)
        var names: [String: MemberName] = [:]
        for row in rows {
            let (account, sealed, username) = try PostgresDatabase.decoding { try row.decode((String, String?, String?).self) }
            let name = try sealed.map { try SealedColumn.memberNames.open($0, key: account, with: keyring) }
            names[account] = MemberName(name: name, username: username)
        }
        return names
    }

    public func forgetUnseen(before cutoff: Date) async throws -> Int {
        try await database.query("DELETE FROM members WHERE seen_at < \(cutoff) RETURNING account").count
    }
}
