import Foundation
import GatehouseCore
import SQLiteNIO

public struct SQLiteSessionStore: SessionStore {
    let database: SQLiteDatabase
    let keyring: StorageKeyring

    public init(database: SQLiteDatabase, keyring: StorageKeyring) {
        self.database = database
        self.keyring = keyring
    }

    private func session(_ row: SQLiteRow) throws -> Session {
        guard let id = row.column("id")?.string, let body = row.column("body")?.string else { throw StorageError.corrupt("session row") }
        return try SessionRow.decode(body, id: id, with: keyring)
    }

    public func insert(_ session: Session) async throws {
        try await database.query(
            "INSERT INTO sessions (id, sub, sid, body, last_seen_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)",
            [
                .text(session.id), .text(session.identity.sub), .text(session.providerSessionID),
                .text(try SessionRow.encode(session, with: keyring)), .time(session.lastSeenAt), .time(session.expiresAt),
            ]
        )
    }

    public func find(id: String) async throws -> Session? {
        guard let row = try await database.query("SELECT id, body FROM sessions WHERE id = ?", [.text(id)]).first else { return nil }
        return try session(row)
    }

    public func update(_ session: Session) async throws {
        try await database.query(
            // The level and the chat account are the stored ones: only the registration's triggers change them after
            // sign-in, so a copy read before a registration finished (or was reset) never writes the old ones back.
            // The frame choices and the assurance are the stored ones too (`setFrame` and `setAssurance` alone write them).
            """
            UPDATE sessions SET body = json_set(?1, '$.level', json_extract(body, '$.level'), '$.chatUserID', json_extract(body, '$.chatUserID'),
                '$.frame', json(COALESCE(json_extract(body, '$.frame'), 'null')),
                '$.assurance', json(COALESCE(json_extract(body, '$.assurance'), 'null'))),
                last_seen_at = ?2, expires_at = ?3 WHERE id = ?4
            """,
            [.text(try SessionRow.encode(session, with: keyring)), .time(session.lastSeenAt), .time(session.expiresAt), .text(session.id)]
        )
    }

    public func setFrame(_ change: FramePreferences, sessionID: String) async throws {
        try await database.query(
            "UPDATE sessions SET body = json_set(body, '$.frame', json_patch(COALESCE(json_extract(body, '$.frame'), '{}'), ?)) WHERE id = ?",
            [.text(try RowCoding.encode(change)), .text(sessionID)])
    }

    public func setAssurance(_ assurance: Assurance, sessionID: String) async throws {
        try await database.query(
            "UPDATE sessions SET body = json_set(body, '$.assurance', json(?)) WHERE id = ?", [.text(try RowCoding.encode(assurance)), .text(sessionID)])
    }

    public func delete(id: String) async throws {
        try await database.query("DELETE FROM sessions WHERE id = ?", [.text(id)])
    }

    public func end(id: String, until: Date, timedOutMember: String?) async throws {
        try await database.query(
            """
            INSERT INTO ended_sessions (id, until, timed_out_sub) VALUES (?, ?, ?)
            ON CONFLICT (id) DO UPDATE SET until = excluded.until, timed_out_sub = excluded.timed_out_sub
            """, [.text(id), .time(until), .text(timedOutMember)])
        try await delete(id: id)
    }

    public func ended(id: String, now: Date) async throws -> EndedSession? {
        try await database.query("SELECT timed_out_sub FROM ended_sessions WHERE id = ? AND until > ?", [.text(id), .time(now)]).first.map {
            EndedSession(timedOutMember: $0.column("timed_out_sub")?.string)
        }
    }

    public func deleteExpired(now: Date, idleCutoff: Date) async throws -> [String] {
        try await database.query("DELETE FROM ended_sessions WHERE until <= ?", [.time(now)])
        return try await database.query(
            "DELETE FROM sessions WHERE expires_at <= ? OR last_seen_at <= ? RETURNING id", [.time(now), .time(idleCutoff)]
        ).compactMap { $0.column("id")?.string }
    }

    public func sessions(subject: String, now: Date, idleCutoff: Date) async throws -> [Session] {
        try await database.query(
            "SELECT id, body FROM sessions WHERE sub = ? AND expires_at > ? AND last_seen_at > ? ORDER BY last_seen_at DESC",
            [.text(subject), .time(now), .time(idleCutoff)]
        ).map(session)
    }

    public func levels(now: Date, idleCutoff: Date) async throws -> [String: (sessions: Int, members: Int)] {
        let rows = try await database.query(
            """
            SELECT json_extract(body, '$.level') AS level, COUNT(*) AS sessions, COUNT(DISTINCT sub) AS members FROM sessions
            WHERE expires_at > ? AND last_seen_at > ? GROUP BY level
            """, [.time(now), .time(idleCutoff)])
        var levels: [String: (sessions: Int, members: Int)] = [:]
        for row in rows {
            guard let level = row.column("level")?.string else { continue }
            levels[level] = (row.column("sessions")?.integer ?? 0, row.column("members")?.integer ?? 0)
        }
        return levels
    }

    public func countActive(now: Date, idleCutoff: Date) async throws -> Int {
        try await database.query(
            "SELECT COUNT(*) AS n FROM sessions WHERE expires_at > ? AND last_seen_at > ?", [.time(now), .time(idleCutoff)]
        ).first?.column("n")?.integer ?? 0
    }

    public func deleteProviderSessions(subject: String?, providerSessionID: String?) async throws -> [Session] {
        let rows: [SQLiteRow]
        if let providerSessionID {
            rows = try await database.query(
                "DELETE FROM sessions WHERE sid = ?1 AND (?2 IS NULL OR sub = ?2) RETURNING id, body",
                [.text(providerSessionID), .text(subject)])
        } else if let subject {
            rows = try await database.query("DELETE FROM sessions WHERE sub = ? RETURNING id, body", [.text(subject)])
        } else {
            return []
        }
        return try rows.map(session)
    }
}
