import Foundation
import PostgresNIO

public struct PostgresAssertionKeyStore: AssertionKeyStore {
    let database: PostgresDatabase
    let keyring: StorageKeyring

    public init(database: PostgresDatabase, keyring: StorageKeyring) {
        self.database = database
        self.keyring = keyring
    }

    public func keys() async throws -> [AssertionKeyRecord] {
        try await database.query("SELECT generation, private_key, signs_from FROM assertion_keys ORDER BY generation").map { row in
            let (generation, key, signsFrom) = try PostgresDatabase.decoding { try row.decode((Int, String, Date).self) }
            return AssertionKeyRecord(
                generation: generation, privateKey: try SealedColumn.assertionKeys.open(key, key: String(generation), with: keyring),
                signsFrom: signsFrom)
        }
    }

    public func add(_ record: AssertionKeyRecord) async throws -> Bool {
        let privateKey = try SealedColumn.assertionKeys.seal(record.privateKey, key: String(record.generation), with: keyring)
        return try await !database.query(
            """
            INSERT INTO assertion_keys (generation, private_key, signs_from)
            VALUES (\(record.generation), \(privateKey), \(record.signsFrom)) ON CONFLICT DO NOTHING RETURNING generation
            """
        ).isEmpty
    }

    public func remove(generations: [Int]) async throws {
        try await database.query("DELETE FROM assertion_keys WHERE generation = ANY(\(generations))")
    }
}
