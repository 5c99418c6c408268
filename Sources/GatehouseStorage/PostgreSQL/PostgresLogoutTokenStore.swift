import Foundation
import PostgresNIO

public struct PostgresLogoutTokenStore: LogoutTokenStore {
    let database: PostgresDatabase

    public init(database: PostgresDatabase) { self.database = database }

    public func remember(issuer: String, tokenID: String, until: Date) async throws -> Bool {
        try await !database.query(
            "INSERT INTO logout_tokens (issuer, jti, expires_at) VALUES (\(issuer), \(tokenID), \(until)) ON CONFLICT DO NOTHING RETURNING jti"
        ).isEmpty
    }

    public func forget(issuer: String, tokenID: String) async throws {
        try await database.query("DELETE FROM logout_tokens WHERE issuer = \(issuer) AND jti = \(tokenID)")
    }

    public func deleteExpired(now: Date) async throws -> Int {
        try await database.query("DELETE FROM logout_tokens WHERE expires_at <= \(now) RETURNING jti").count
    }
}
