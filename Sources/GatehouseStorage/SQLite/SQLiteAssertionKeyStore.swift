import Foundation
import SQLiteNIO

public struct SQLiteAssertionKeyStore: AssertionKeyStore {
    let database: SQLiteDatabase
    let keyring: StorageKeyring

    public init(database: SQLiteDatabase, keyring: StorageKeyring) {
        self.database = database
        self.keyring = keyring
    }

    public func keys() async throws -> [AssertionKeyRecord] {
        try await database.query("SELECT generation, private_key, signs_from FROM assertion_keys ORDER BY generation").map { row in
            guard let generation = row.column("generation")?.integer, let key = row.column("private_key")?.string,
                let signsFrom = row.column("signs_from")?.double
            else { throw StorageError.corrupt("assertion key row") }
            return AssertionKeyRecord(
                generation: generation, privateKey: try SealedColumn.assertionKeys.open(key, key: String(generation), with: keyring),
                signsFrom: Date(timeIntervalSince1970: signsFrom))
        }
    }

    public func add(_ record: AssertionKeyRecord) async throws -> Bool {
        try await !database.query(
            "INSERT INTO assertion_keys (generation, private_key, signs_from) VALUES (?, ?, ?) ON CONFLICT DO NOTHING RETURNING generation",
            [
                .integer(record.generation), .text(try SealedColumn.assertionKeys.seal(record.privateKey, key: String(record.generation), with: keyring)),
                .time(record.signsFrom),
            ]
        ).isEmpty
    }

    public func remove(generations: [Int]) async throws {
        for generation in generations {
            try await database.query("DELETE FROM assertion_keys WHERE generation = ?", [.integer(generation)])
        }
    }
}
