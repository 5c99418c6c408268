import Foundation
import GatehouseCore
import SQLiteNIO

public struct SQLiteLoginAttemptStore: LoginAttemptStore {
    let database: SQLiteDatabase
    let keyring: StorageKeyring

    public init(database: SQLiteDatabase, keyring: StorageKeyring) {
        self.database = database
        self.keyring = keyring
    }

    public func insert(_ attempt: LoginAttempt) async throws {
        try await database.query(
            "INSERT INTO login_attempts (state, body, created_at) VALUES (?, ?, ?)",
            [.text(attempt.state), .text(try SealedColumn.loginAttempts.seal(attempt, key: attempt.state, with: keyring)), .time(attempt.createdAt)]
        )
    }

    public func take(state: String) async throws -> LoginAttempt? {
        guard let row = try await database.query("DELETE FROM login_attempts WHERE state = ? RETURNING body", [.text(state)]).first
        else { return nil }
        guard let body = row.column("body")?.string else { throw StorageError.corrupt("login attempt row") }
        return try SealedColumn.loginAttempts.open(LoginAttempt.self, body, key: state, with: keyring)
    }

    public func deleteOlder(than cutoff: Date) async throws -> Int {
        try await database.query("DELETE FROM login_attempts WHERE created_at <= ? RETURNING state", [.time(cutoff)]).count
    }
}
