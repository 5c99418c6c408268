import Foundation
import SQLiteNIO

public struct SQLiteSessionStore: SessionStore {
    let database: SQLiteDatabase

    public init(database: SQLiteDatabase) { self.database = database }

    public func insert(_ session: Session) async throws {
        try await database.query(
            "INSERT INTO sessions (id, sub, body, last_seen_at, expires_at) VALUES (?, ?, ?, ?, ?)",
            [.text(session.id), .text(session.identity.sub), .text(try RowCoding.encode(session)), .time(session.lastSeenAt), .time(session.expiresAt)]
        )
    }

    public func find(id: String) async throws -> Session? {
        guard let row = try await database.query("SELECT body FROM sessions WHERE id = ?", [.text(id)]).first else { return nil }
        return try RowCoding.decode(Session.self, from: row)
    }

    public func update(_ session: Session) async throws {
        try await database.query(
            "UPDATE sessions SET body = ?, last_seen_at = ?, expires_at = ? WHERE id = ?",
            [.text(try RowCoding.encode(session)), .time(session.lastSeenAt), .time(session.expiresAt), .text(session.id)]
        )
    }

    public func delete(id: String) async throws {
        try await database.query("DELETE FROM sessions WHERE id = ?", [.text(id)])
    }

    public func deleteExpired(now: Date, idleCutoff: Date) async throws -> Int {
        try await database.query(
            "DELETE FROM sessions WHERE expires_at <= ? OR last_seen_at <= ? RETURNING id", [.time(now), .time(idleCutoff)]
        ).count
    }
}

public struct SQLiteLoginAttemptStore: LoginAttemptStore {
    let database: SQLiteDatabase

    public init(database: SQLiteDatabase) { self.database = database }

    public func insert(_ attempt: LoginAttempt) async throws {
        try await database.query(
            "INSERT INTO login_attempts (state, body, created_at) VALUES (?, ?, ?)",
            [.text(attempt.state), .text(try RowCoding.encode(attempt)), .time(attempt.createdAt)]
        )
    }

    public func take(state: String) async throws -> LoginAttempt? {
        guard let row = try await database.query("DELETE FROM login_attempts WHERE state = ? RETURNING body", [.text(state)]).first
        else { return nil }
        return try RowCoding.decode(LoginAttempt.self, from: row)
    }

    public func deleteOlder(than cutoff: Date) async throws -> Int {
        try await database.query("DELETE FROM login_attempts WHERE created_at <= ? RETURNING state", [.time(cutoff)]).count
    }
}

public struct SQLiteRegistrationStore: RegistrationStore {
    let database: SQLiteDatabase

    public init(database: SQLiteDatabase) { self.database = database }

    public func isRegistered(sub: String) async throws -> Bool {
        try await !database.query("SELECT 1 FROM registrations WHERE sub = ?", [.text(sub)]).isEmpty
    }

    public func markRegistered(sub: String, username: String, at date: Date) async throws {
        try await database.query(
            "INSERT INTO registrations (sub, username, registered_at) VALUES (?, ?, ?) ON CONFLICT(sub) DO NOTHING",
            [.text(sub), .text(username), .time(date)]
        )
    }
}

public struct SQLiteEventStore: EventStore {
    let database: SQLiteDatabase

    public init(database: SQLiteDatabase) { self.database = database }

    public func append(_ event: GatewayEvent) async throws {
        try await database.query(
            "INSERT INTO events (name, sub, detail, at) VALUES (?, ?, ?, ?)",
            [.text(event.name.rawValue), .text(event.sub), .text(event.detail), .time(event.at)]
        )
    }

    public func events(since: Date) async throws -> [GatewayEvent] {
        try await database.query("SELECT name, sub, detail, at FROM events WHERE at >= ? ORDER BY id", [.time(since)]).compactMap { row in
            guard let name = row.column("name")?.string.flatMap(EventName.init(rawValue:)) else { return nil }
            return GatewayEvent(
                name: name, sub: row.column("sub")?.string, detail: row.column("detail")?.string,
                at: Date(timeIntervalSince1970: row.column("at")?.double ?? 0)
            )
        }
    }
}
