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
        case .sqlite: stores = .sqlite(try await SQLiteDatabase.open(path: ":memory:", logger: Self.logger))
        // A generous deadline: a loaded CI machine queues a hundred parallel transactions for a while.
        case .postgres:
            stores = .postgres(try PostgresDatabase(url: try await TestPostgres.freshDatabase(), queryTimeout: .seconds(60), logger: Self.logger))
        }
        try await stores.whileRunning(body)
    }
}
