import Foundation
import SQLiteNIO

public struct SQLiteMemberStore: MemberStore {
    let database: SQLiteDatabase
    let keyring: StorageKeyring

    public init(database: SQLiteDatabase, keyring: StorageKeyring) {
        self.database = database
        self.keyring = keyring
    }

    public func signedIn(account: String, name: String?, at: Date) async throws {
        let sealed: SQLiteData = try name.map { .text(try SealedColumn.memberNames.seal($0, key: account, with: keyring)) } ?? .null
        try await database.query(
            """
            INSERT INTO members (account, name, recent_apps, seen_at) VALUES (?1, ?2, '', ?3)
            ON CONFLICT (account) DO UPDATE SET name = COALESCE(?2, name), seen_at = ?3
            """, [.text(account), sealed, .time(at)])
    }

    public func recentApps(account: String) async throws -> [String] {
        RecentAppsColumn.decode(
            try await database.query("SELECT recent_apps FROM members WHERE account = ?", [.text(account)]).first?.column("recent_apps")?.string)
    }

    public func setRecentApps(_ slugs: [String], account: String, at: Date) async throws {
        try await database.query(
            """
            INSERT INTO members (account, recent_apps, seen_at) VALUES (?1, ?2, ?3)
            ON CONFLICT (account) DO UPDATE SET recent_apps = ?2, seen_at = ?3
            """, [.text(account), .text(RecentAppsColumn.encode(slugs)), .time(at)])
    }

    public func names(accounts: [String]) async throws -> [String: MemberName] {
        guard !accounts.isEmpty else { return [:] }
        let rows = try await database.query(
            """
            SELECT a.account AS account, m.name AS name, r.username AS username
            FROM (SELECT value AS account FROM json_each(?)) a
            LEFT JOIN members m ON m.account = a.account LEFT JOIN registrations r ON r.sub = a.account
            WHERE m.account IS NOT NULL OR r.sub IS NOT NULL
            """, [.text(String(decoding: try JSONEncoder().encode(accounts), as: UTF8.self))])
        var names: [String: MemberName] = [:]
        for row in rows {
            guard let account = row.column("account")?.string else { continue }
            let name = try row.column("name")?.string.map { try SealedColumn.memberNames.open($0, key: account, with: keyring) }
            names[account] = MemberName(name: name, username: row.column("username")?.string)
        }
        return names
    }

    public func forgetUnseen(before cutoff: Date) async throws -> Int {
        try await database.query("DELETE FROM members WHERE seen_at < ? RETURNING account", [.time(cutoff)]).count
    }
}
