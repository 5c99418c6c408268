import Foundation
import SQLiteNIO

public struct SQLiteAssertionKeyStore: AssertionKeyStore {
    let database: SQLiteDatabase

    public init(database: SQLiteDatabase) { self.database = database }

    public func keys() async throws -> [AssertionKeyRecord] {
        try await database.query("SELECT generation, private_key, signs_from FROM assertion_keys ORDER BY generation").map { row in
            guard let generation = row.column("generation")?.integer, let key = row.column("private_key")?.string,
                let signsFrom = row.column("signs_from")?.double
            else { throw StorageError.corrupt("assertion key row") }
            return AssertionKeyRecord(generation: generation, privateKey: key, signsFrom: Date(timeIntervalSince1970: signsFrom))
        }
    }

    public func add(_ record: AssertionKeyRecord) async throws -> Bool {
        try await !database.query(
            "INSERT INTO assertion_keys (generation, private_key, signs_from) VALUES (?, ?, ?) ON CONFLICT DO NOTHING RETURNING generation",
            [.integer(record.generation), .text(record.privateKey), .time(record.signsFrom)]
        ).isEmpty
    }

    public func remove(generations: [Int]) async throws {
        for generation in generations {
            try await database.query("DELETE FROM assertion_keys WHERE generation = ?", [.integer(generation)])
        }
    }
}
