import Foundation
import GatehouseStorage
import Logging
import Testing

@testable import Gatehouse

/// The store backends every store test runs against: SQLite in memory, and a fresh database on a real PostgreSQL
/// server (`TestPostgres`).
enum StoreBackend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite
    case postgres

    var testDescription: String { rawValue }

    static let logger = Logger(label: "test-store")

    /// Runs `body` with fresh, migrated stores of this backend, closed afterwards.
    func withStores(_ body: (Stores) async throws -> Void) async throws {
        let stores: Stores
        switch self {
        case .sqlite: stores = .sqlite(try await SQLiteDatabase.open(path: ":memory:", logger: Self.logger), keyring: .forTests)
        case .postgres: stores = .postgres(try TestPostgres.connect(try await TestPostgres.freshDatabase()), keyring: .forTests)
        }
        try await stores.whileRunning(body)
    }
}

extension StorageKeyring {
    /// One key for every store and gateway of the test process: replicas of one test open each other's rows.
    static let forTests = try! StorageKeyring.parse(StorageKeyring.newKeyText())
}

extension StorageConfiguration {
    /// A PostgreSQL store at `url` with the tests' key.
    static func postgres(_ url: String) -> StorageConfiguration {
        StorageConfiguration(kind: .postgres, postgresURL: url, keys: .keyring(.forTests))
    }
}
