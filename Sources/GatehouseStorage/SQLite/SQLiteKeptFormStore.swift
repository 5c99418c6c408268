import Foundation
import GatehouseCore
import SQLiteNIO

public struct SQLiteKeptFormStore: KeptFormStore {
    let database: SQLiteDatabase
    let keyring: StorageKeyring

    public init(database: SQLiteDatabase, keyring: StorageKeyring) {
        self.database = database
        self.keyring = keyring
    }

    public func keep(_ form: KeptForm) async throws {
        try await database.query(
            "INSERT INTO kept_forms (id_hash, sub, body, created_at, expires_at) VALUES (?, ?, ?, ?, ?)",
            [
                .text(form.idHash), .text(form.sub), .text(try SealedColumn.keptForms.seal(form, key: form.idHash, with: keyring)),
                .time(form.createdAt), .time(form.expiresAt),
            ])
        try await database.query(
            """
            DELETE FROM kept_forms WHERE sub = ?1 AND id_hash NOT IN
                (SELECT id_hash FROM kept_forms WHERE sub = ?1 ORDER BY created_at DESC LIMIT ?2)
            """, [.text(form.sub), .integer(KeptForm.perMember)])
    }

    public func find(idHash: String, sub: String, now: Date) async throws -> KeptForm? {
        try await form(
            database.query(
                "SELECT id_hash, body FROM kept_forms WHERE id_hash = ? AND sub = ? AND expires_at > ?", [.text(idHash), .text(sub), .time(now)]))
    }

    public func take(idHash: String, sub: String, now: Date) async throws -> KeptForm? {
        try await form(
            database.query(
                "DELETE FROM kept_forms WHERE id_hash = ? AND sub = ? AND expires_at > ? RETURNING id_hash, body",
                [.text(idHash), .text(sub), .time(now)]))
    }

    public func deleteExpired(now: Date) async throws -> Int {
        try await database.query("DELETE FROM kept_forms WHERE expires_at <= ? RETURNING id_hash", [.time(now)]).count
    }

    private func form(_ rows: [SQLiteRow]) throws -> KeptForm? {
        guard let row = rows.first else { return nil }
        guard let key = row.column("id_hash")?.string, let body = row.column("body")?.string else { throw StorageError.corrupt("kept form row") }
        return try SealedColumn.keptForms.open(KeptForm.self, body, key: key, with: keyring)
    }
}
