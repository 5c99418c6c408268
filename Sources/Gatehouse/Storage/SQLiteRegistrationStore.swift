import Foundation
import SQLiteNIO

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
