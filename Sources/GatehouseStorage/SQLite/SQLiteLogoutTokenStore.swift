import Foundation
import SQLiteNIO

public struct SQLiteLogoutTokenStore: LogoutTokenStore {
    let database: SQLiteDatabase

    public init(database: SQLiteDatabase) { self.database = database }

    public func remember(issuer: String, tokenID: String, until: Date) async throws -> Bool {
        try await !database.query(
            "INSERT INTO logout_tokens (issuer, jti, expires_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING RETURNING jti",
            [.text(issuer), .text(tokenID), .time(until)]
        ).isEmpty
    }

    public func forget(issuer: String, tokenID: String) async throws {
        try await database.query("DELETE FROM logout_tokens WHERE issuer = ? AND jti = ?", [.text(issuer), .text(tokenID)])
    }

    public func deleteExpired(now: Date) async throws -> Int {
        try await database.query("DELETE FROM logout_tokens WHERE expires_at <= ? RETURNING jti", [.time(now)]).count
    }
}
