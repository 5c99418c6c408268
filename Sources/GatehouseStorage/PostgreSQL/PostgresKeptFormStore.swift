import Foundation
import GatehouseCore
import PostgresNIO

public struct PostgresKeptFormStore: KeptFormStore {
    let database: PostgresDatabase
    let keyring: StorageKeyring

    public init(database: PostgresDatabase, keyring: StorageKeyring) {
        self.database = database
        self.keyring = keyring
    }

    public func keep(_ form: KeptForm) async throws {
        let body = try SealedColumn.keptForms.seal(form, key: form.idHash, with: keyring)
        try await database.query(
            """
            INSERT INTO kept_forms (id_hash, sub, body, created_at, expires_at)
            VALUES (\(form.idHash), \(form.sub), \(body), \(form.createdAt), \(form.expiresAt))
            """)
        try await database.query(
            """
            DELETE FROM kept_forms WHERE sub = \(form.sub) AND id_hash NOT IN
                (SELECT id_hash FROM kept_forms WHERE sub = \(form.sub) ORDER BY created_at DESC LIMIT \(KeptForm.perMember))
            """)
    }

    public func find(idHash: String, sub: String, now: Date) async throws -> KeptForm? {
        try await database.sealedBody(
            KeptForm.self, .keptForms, key: idHash, keyring,
            "SELECT body FROM kept_forms WHERE id_hash = \(idHash) AND sub = \(sub) AND expires_at > \(now)")
    }

    /// `DELETE … RETURNING` hands the row to exactly one caller, whichever replica asks.
    public func take(idHash: String, sub: String, now: Date) async throws -> KeptForm? {
        try await database.sealedBody(
            KeptForm.self, .keptForms, key: idHash, keyring,
            "DELETE FROM kept_forms WHERE id_hash = \(idHash) AND sub = \(sub) AND expires_at > \(now) RETURNING body")
    }

    public func deleteExpired(now: Date) async throws -> Int {
        try await database.query("DELETE FROM kept_forms WHERE expires_at <= \(now) RETURNING id_hash").count
    }
}
