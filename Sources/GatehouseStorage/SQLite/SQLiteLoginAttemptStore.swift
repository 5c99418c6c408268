import Foundation
import GatehouseCore
import SQLiteNIO

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
