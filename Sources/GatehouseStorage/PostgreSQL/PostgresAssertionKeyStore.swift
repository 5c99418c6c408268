import Foundation
import PostgresNIO

public struct PostgresAssertionKeyStore: AssertionKeyStore {
    let database: PostgresDatabase

    public init(database: PostgresDatabase) { self.database = database }

    public func keys() async throws -> [AssertionKeyRecord] {
        try await database.query("SELECT generation, private_key, signs_from FROM assertion_keys ORDER BY generation").map { row in
            let (generation, key, signsFrom) = try PostgresDatabase.decoding { try row.decode((Int, String, Date).self) }
            return AssertionKeyRecord(generation: generation, privateKey: key, signsFrom: signsFrom)
        }
    }

    public func add(_ record: AssertionKeyRecord) async throws -> Bool {
        try await !database.query(
            """
            INSERT INTO assertion_keys (generation, private_key, signs_from)
            VALUES (\(record.generation), \(record.privateKey), \(record.signsFrom)) ON CONFLICT DO NOTHING RETURNING generation
            """
        ).isEmpty
    }

    public func remove(generations: [Int]) async throws {
        try await database.query("DELETE FROM assertion_keys WHERE generation = ANY(\(generations))")
    }
}
