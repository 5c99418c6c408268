import NIOConcurrencyHelpers

/// What a database has been asked, for the metrics: queries running now (each holds, or waits for, one of the
/// pool's connections), queries in all, and failed queries by kind — `unavailable` (no server, no connection, a
/// deadline) or `query` (the server refused the statement).
public final class DatabaseStatistics: Sendable {
    public struct Figures: Sendable, Equatable {
        public var running = 0
        public var queries = 0
        public var unavailable = 0
        public var failed = 0
    }

    /// The connections the pool may open (1 for SQLite's one connection).
    public let maximumConnections: Int
    private let figures = NIOLockedValueBox(Figures())

    init(maximumConnections: Int) { self.maximumConnections = maximumConnections }

    public var current: Figures { figures.withLockedValue { $0 } }

    /// Counts `body` as one query, and its failure by the kind of `StorageError` it threw (a unique violation is an
    /// answer, not a failure).
    func counting<T>(_ body: () async throws -> T) async throws -> T {
        figures.withLockedValue {
            $0.running += 1
            $0.queries += 1
        }
        defer { figures.withLockedValue { $0.running -= 1 } }
        do {
            return try await body()
        } catch let error as StorageError {
            figures.withLockedValue {
                switch error {
                case .unavailable: $0.unavailable += 1
                case .query: $0.failed += 1
                case .corrupt, .uniqueViolation, .newerSchema: break
                }
            }
            throw error
        }
    }
}
