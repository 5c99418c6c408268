import Foundation
import GatehouseCore
import PostgresNIO

public struct PostgresLoginAttemptStore: LoginAttemptStore {
    let database: PostgresDatabase
    let keyring: StorageKeyring

    public init(database: PostgresDatabase, keyring: StorageKeyring) {
        self.database = database
        self.keyring = keyring
    }

    public func insert(_ attempt: LoginAttempt) async throws {
        let body = try SealedColumn.loginAttempts.seal(attempt, key: attempt.state, with: keyring)
        try await database.query(
            "INSERT INTO login_attempts (state, body, created_at) VALUES (\(attempt.state), \(body), \(attempt.createdAt))")
    }

    /// `DELETE … RETURNING` hands the row to exactly one caller, whichever replica asks.
    public func take(state: String) async throws -> LoginAttempt? {
        try await database.sealedBody(LoginAttempt.self, .loginAttempts, key: state, keyring, "DELETE FROM login_attempts WHERE state = \(state) RETURNING body")
    }

    public func deleteOlder(than cutoff: Date) async throws -> Int {
        try await database.query("DELETE FROM login_attempts WHERE created_at <= \(cutoff) RETURNING state").count
    }
}
