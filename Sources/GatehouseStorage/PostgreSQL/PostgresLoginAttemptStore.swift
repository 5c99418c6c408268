import Foundation
import GatehouseCore
import PostgresNIO

public struct PostgresLoginAttemptStore: LoginAttemptStore {
    let database: PostgresDatabase

    public init(database: PostgresDatabase) { self.database = database }

    public func insert(_ attempt: LoginAttempt) async throws {
        let body = try RowCoding.encode(attempt)
        try await database.query(
            "INSERT INTO login_attempts (state, body, created_at) VALUES (\(attempt.state), \(body), \(attempt.createdAt))")
    }

    /// `DELETE … RETURNING` hands the row to exactly one caller, whichever replica asks.
    public func take(state: String) async throws -> LoginAttempt? {
        try await database.body(LoginAttempt.self, "DELETE FROM login_attempts WHERE state = \(state) RETURNING body")
    }

    public func deleteOlder(than cutoff: Date) async throws -> Int {
        try await database.query("DELETE FROM login_attempts WHERE created_at <= \(cutoff) RETURNING state").count
    }
}
