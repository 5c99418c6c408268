import Foundation
import GatehouseCore
import PostgresNIO

public struct PostgresSessionStore: SessionStore {
    let database: PostgresDatabase
    let keyring: StorageKeyring

    public init(database: PostgresDatabase, keyring: StorageKeyring) {
        self.database = database
        self.keyring = keyring
    }

    /// A row of `id, body::text`.
    private func session(_ row: PostgresRow) throws -> Session {
        let (id, body) = try PostgresDatabase.decoding { try row.decode((String, String).self) }
        return try SessionRow.decode(body, id: id, with: keyring)
    }

    public func insert(_ session: Session) async throws {
        let body = try SessionRow.encode(session, with: keyring)
        try await database.query(
            """
            INSERT INTO sessions (id, sub, sid, body, last_seen_at, expires_at)
            VALUES (
                \(session.id), \(session.identity.sub), \(session.providerSessionID), \(body)::jsonb, \(session.lastSeenAt),
                \(session.expiresAt))
            """)
    }

    public func find(id: String) async throws -> Session? {
        try await database.query("SELECT id, body::text FROM sessions WHERE id = \(id)").first.map(session)
    }

    public func update(_ session: Session) async throws {
        let body = try SessionRow.encode(session, with: keyring)
        // The level and the chat account are the stored ones: only the registration's triggers change them after
        // sign-in, so a copy read before a registration finished (or was reset) never writes the old ones back.
        // The frame choices and the assurance are the stored ones too (`setFrame` and `setAssurance` alone write them).
        try await database.query(
            """
            UPDATE sessions SET body = jsonb_set(jsonb_set(jsonb_set(jsonb_set(\(body)::jsonb, '{level}', body->'level'),
                '{chatUserID}', COALESCE(body->'chatUserID', 'null'::jsonb)), '{frame}', COALESCE(body->'frame', 'null'::jsonb)),
                '{assurance}', COALESCE(body->'assurance', 'null'::jsonb)),
                last_seen_at = \(session.lastSeenAt), expires_at = \(session.expiresAt)
            WHERE id = \(session.id)
            """)
    }

    public func setFrame(_ change: FramePreferences, sessionID: String) async throws {
        let body = try RowCoding.encode(change)
        try await database.query(
            "UPDATE sessions SET body = jsonb_set(body, '{frame}', COALESCE(NULLIF(body->'frame', 'null'::jsonb), '{}'::jsonb) || \(body)::jsonb) WHERE id = \(sessionID)"
        )
    }

    public func setAssurance(_ assurance: Assurance, sessionID: String) async throws {
        let body = try RowCoding.encode(assurance)
        try await database.query("UPDATE sessions SET body = jsonb_set(body, '{assurance}', \(body)::jsonb) WHERE id = \(sessionID)")
    }

    public func delete(id: String) async throws {
        try await database.query("DELETE FROM sessions WHERE id = \(id)")
    }

    public func end(id: String, until: Date, timedOutMember: String?) async throws {
        try await database.query(
            """
            INSERT INTO ended_sessions (id, until, timed_out_sub) VALUES (\(id), \(until), \(timedOutMember))
            ON CONFLICT (id) DO UPDATE SET until = EXCLUDED.until, timed_out_sub = EXCLUDED.timed_out_sub
            """)
        try await delete(id: id)
    }

    public func ended(id: String, now: Date) async throws -> EndedSession? {
        try await database.query("SELECT timed_out_sub FROM ended_sessions WHERE id = \(id) AND until > \(now)").first.map { row in
            EndedSession(timedOutMember: try PostgresDatabase.decoding { try row.decode(String?.self) })
        }
    }

    public func deleteExpired(now: Date, idleCutoff: Date) async throws -> [String] {
        try await database.query("DELETE FROM ended_sessions WHERE until <= \(now)")
        return try await database.query("DELETE FROM sessions WHERE expires_at <= \(now) OR last_seen_at <= \(idleCutoff) RETURNING id").map { row in
            try PostgresDatabase.decoding { try row.decode(String.self) }
        }
    }

    public func sessions(subject: String, now: Date, idleCutoff: Date) async throws -> [Session] {
        try await database.query(
            """
            SELECT id, body::text FROM sessions WHERE sub = \(subject) AND expires_at > \(now) AND last_seen_at > \(idleCutoff)
            ORDER BY last_seen_at DESC
            """
        ).map(session)
    }

    public func levels(now: Date, idleCutoff: Date) async throws -> [String: (sessions: Int, members: Int)] {
        let rows = try await database.query(
            """
            SELECT body->>'level', COUNT(*)::bigint, COUNT(DISTINCT sub)::bigint FROM sessions
            WHERE expires_at > \(now) AND last_seen_at > \(idleCutoff) GROUP BY 1
            """)
        var levels: [String: (sessions: Int, members: Int)] = [:]
        for row in rows {
            let (level, sessions, members) = try PostgresDatabase.decoding { try row.decode((String, Int, Int).self) }
            levels[level] = (sessions, members)
        }
        return levels
    }

    public func countActive(now: Date, idleCutoff: Date) async throws -> Int {
        guard let row = try await database.query("SELECT COUNT(*) FROM sessions WHERE expires_at > \(now) AND last_seen_at > \(idleCutoff)").first
        else { return 0 }
        return try PostgresDatabase.decoding { try row.decode(Int.self) }
    }

    public func deleteProviderSessions(subject: String?, providerSessionID: String?) async throws -> [Session] {
        let rows: [PostgresRow]
        if let providerSessionID {
            rows = try await database.query(
                "DELETE FROM sessions WHERE sid = \(providerSessionID) AND (\(subject)::text IS NULL OR sub = \(subject)) RETURNING id, body::text")
        } else if let subject {
            rows = try await database.query("DELETE FROM sessions WHERE sub = \(subject) RETURNING id, body::text")
        } else {
            return []
        }
        return try rows.map(session)
    }

    /// The session's advisory lock, held by a transaction for as long as `body` runs: a replica that wants to
    /// refresh the same session waits, then finds the tokens fresh.
    public func withExclusiveRefresh<T: Sendable>(sessionID: String, _ body: @Sendable @escaping () async throws -> T) async throws -> T {
        try await database.transaction(timeout: Self.refreshTimeout) { transaction in
            try await transaction.query("SELECT pg_advisory_xact_lock(\(Self.refreshLockClass), hashtext(\(sessionID)))")
            return try await body()
        }
    }

    static let refreshLockClass: Int32 = 3
    /// Longer than a query's: the lock is held across the call to the identity provider.
    static let refreshTimeout: Duration = .seconds(30)
}
