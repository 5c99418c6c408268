import Foundation
import GatehouseCore
import Logging
import NIOConcurrencyHelpers
import PostgresNIO
import ServiceLifecycle

/// The store several gateway replicas share: one `PostgresClient` (a connection pool), run as a service.
///
/// Every query has a deadline: with the server down or unreachable a request fails with `StorageError.unavailable`
/// after `queryTimeout` instead of waiting for a connection that may never come, and the pool reconnects by itself.
public final class PostgresDatabase: Service, Sendable {
    let client: PostgresClient
    let logger: Logger
    let queryTimeout: Duration
    let statistics: DatabaseStatistics
    private let availability = NIOLockedValueBox(Availability())

    public init(url: String, queryTimeout: Duration = .seconds(5), logger: Logger) throws {
        let configuration = try Self.configuration(url: url)
        self.client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        self.statistics = DatabaseStatistics(maximumConnections: configuration.options.maximumConnections)
        self.logger = logger
        self.queryTimeout = queryTimeout
    }

    /// Runs the pool until the gateway stops (after the server, which is stopped first), then gives it
    /// `closingGrace` to close its connections. The pool waits for every leased connection to come back, and one
    /// leased by work that never ends (a query postgres-nio never answers on a connection closed under it, left
    /// running by a deadline) would hold the gateway's shutdown for ever: after the grace it is left behind.
    public func run() async throws {
        let client = client
        let running = Task { await client.run() }
        let stopped = FirstOutcome<Void>()
        let watcher = Task {
            await running.value
            stopped.finish(.success(()))
        }
        defer { watcher.cancel() }
        try? await cancelWhenGracefulShutdown { try await stopped.value() }
        running.cancel()
        // Waited for even when this task is cancelled (a command's store stops so): the pool closes its connections
        // in milliseconds, and a caller that went on at once would leave them open behind it.
        let closing = Task { try await withTimeout(Self.closingGrace, { await running.value }) { StorageError.unavailable("PostgreSQL pool not closed") } }
        if (try? await closing.value) == nil {
            logger.warning("PostgreSQL connections still in use at shutdown were left open", metadata: ["grace": "\(Self.closingGrace)"])
        }
    }

    static let closingGrace: Duration = .seconds(5)

    // MARK: - Queries

    @discardableResult
    func query(_ query: PostgresQuery) async throws -> [PostgresRow] {
        try await withDeadline(queryTimeout) {
            try await Self.collect(self.client.query(query, logger: self.logger))
        }
    }

    /// Runs `body` in one transaction on one connection (committed when it returns, rolled back when it throws).
    func transaction<T: Sendable>(
        timeout: Duration? = nil, _ body: @Sendable @escaping (Transaction) async throws -> T
    ) async throws -> T {
        try await withDeadline(timeout ?? queryTimeout) {
            do {
                return try await self.client.withTransaction(logger: self.logger) { connection in
                    try await body(Transaction(connection: connection, logger: self.logger))
                }
            } catch let error as PostgresTransactionError {
                throw Self.cause(of: error)
            }
        }
    }

    /// What went wrong in a transaction, as SQLite's stores would say it: the body's own error as it threw it (a
    /// refresh refused, the provider down) once the rollback went through, else the server's error.
    static func cause(of error: PostgresTransactionError) -> any Error {
        if let body = error.closureError, error.rollbackError == nil { return body }
        return error.beginError ?? error.commitError ?? error.rollbackError ?? error.closureError ?? error
    }

    /// A connection inside `transaction`.
    struct Transaction {
        let connection: PostgresConnection
        let logger: Logger

        @discardableResult
        func query(_ query: PostgresQuery) async throws -> [PostgresRow] {
            try await PostgresDatabase.collect(connection.query(query, logger: logger))
        }
    }

    static func collect(_ rows: PostgresRowSequence) async throws -> [PostgresRow] {
        var collected: [PostgresRow] = []
        for try await row in rows { collected.append(row) }
        return collected
    }

    /// Whether the server answers a trivial query within `timeout` (readiness).
    func answers(within timeout: Duration) async -> Bool {
        (try? await withDeadline(timeout) { try await Self.collect(self.client.query("SELECT 1", logger: self.logger)) }) != nil
    }

    /// `body`, or `StorageError.unavailable` once `timeout` has passed; driver errors become `StorageError`.
    ///
    /// Once the server was found unreachable, queries fail at once for a second instead of each waiting out its
    /// deadline (under load they would pile up by the thousand); then one query at a time tries the server until
    /// one gets an answer, and everything flows again.
    private func withDeadline<T: Sendable>(_ timeout: Duration, _ body: @Sendable @escaping () async throws -> T) async throws -> T {
        try await statistics.counting { try await answerWithin(timeout, body) }
    }

    private func answerWithin<T: Sendable>(_ timeout: Duration, _ body: @Sendable @escaping () async throws -> T) async throws -> T {
        guard availability.withLockedValue({ $0.admit(now: .now) }) else {
            throw StorageError.unavailable("PostgreSQL was unreachable a moment ago")
        }
        do {
            let result = try await withTimeout(timeout, body) { StorageError.unavailable("PostgreSQL did not answer within \(timeout)") }
            availability.withLockedValue { $0.answered() }
            return result
        } catch let error as PSQLError {
            let storageError = Self.storageError(error)
            availability.withLockedValue { $0.failed(unavailable: storageError.isUnavailable, now: .now) }
            throw storageError
        } catch let error as StorageError {
            availability.withLockedValue { $0.failed(unavailable: error.isUnavailable, now: .now) }
            throw error
        } catch {
            // The body's own failure (a refresh refused by the provider, say): the server did answer.
            availability.withLockedValue { $0.answered() }
            throw error
        }
    }

    /// Whether the server is worth asking: after it was unreachable, nobody for `quietPeriod`, then one probe.
    struct Availability {
        static let quietPeriod: Duration = .seconds(1)
        private var unreachableUntil: ContinuousClock.Instant?
        private var probing = false

        mutating func admit(now: ContinuousClock.Instant) -> Bool {
            guard let until = unreachableUntil else { return true }
            guard now >= until, !probing else { return false }
            probing = true
            return true
        }

        mutating func answered() {
            unreachableUntil = nil
            probing = false
        }

        mutating func failed(unavailable: Bool, now: ContinuousClock.Instant) {
            guard unavailable else { return answered() }
            unreachableUntil = now + Self.quietPeriod
            probing = false
        }
    }

    static func storageError(_ error: PSQLError) -> StorageError {
        guard let server = error.serverInfo else {
            // No answer from a server at all: refused, reset, closed, failed to authenticate.
            return .unavailable("PostgreSQL: \(error.code)")
        }
        let state = server[.sqlState] ?? "?"
        let message = server[.message] ?? ""
        if state == "23505" { return .uniqueViolation(server[.constraintName] ?? message) }
        // Connection-class and shutdown states: the server is going away or not accepting work.
        if state.hasPrefix("08") || state.hasPrefix("57P") { return .unavailable("PostgreSQL \(state): \(message)") }
        return .query("PostgreSQL \(state): \(message)")
    }

    // MARK: - Configuration

    /// `postgres://user:password@host:port/database?sslmode=disable|prefer|require`; the password may be
    /// percent-encoded. `sslmode` defaults to `prefer`, as libpq's does.
    package static func configuration(url text: String) throws -> PostgresClient.Configuration {
        guard let components = URLComponents(string: text), ["postgres", "postgresql"].contains(components.scheme?.lowercased() ?? ""),
            let host = components.host, !host.isEmpty, let user = components.user, !user.isEmpty
        else {
            throw StorageError.unavailable("storage.postgres_url must look like postgres://user:password@host:5432/database")
        }
        let parameters = Dictionary(
            (components.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { _, last in last })
        let tls: PostgresClient.Configuration.TLS
        switch parameters["sslmode"] ?? "prefer" {
        case "disable": tls = .disable
        case "prefer": tls = .prefer(.makeClientConfiguration())
        case "require", "verify-full": tls = .require(.makeClientConfiguration())
        case let mode: throw StorageError.unavailable("storage.postgres_url: sslmode \(mode) is not one of disable, prefer, require, verify-full")
        }
        let database = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        var configuration = PostgresClient.Configuration(
            host: host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host, port: components.port ?? 5432,
            username: components.user?.removingPercentEncoding ?? user,
            password: components.password?.removingPercentEncoding, database: database.isEmpty ? nil : database, tls: tls)
        configuration.options.connectTimeout = .seconds(5)
        configuration.options.additionalStartupParameters = [("application_name", "gatehouse")]
        return configuration
    }

    // MARK: - Migrations

    /// Migrations run at start inside one transaction that first takes this advisory lock, so replicas starting
    /// together apply each migration once: the second waits, then finds them recorded.
    static let migrationLock: Int64 = 0x6761_7465_686F_7573

    /// The migrations' deadline: not a query's. A replica waits on the lock for another's migrations, and a
    /// schema change (a new table, an index over a large one) takes seconds where a query takes milliseconds; with a
    /// query's five seconds, a second replica starting beside the first, or any replica on a loaded server, gave up
    /// and did not start. A server that does not answer at all is still found within a query's deadline, first.
    static let migrationTimeout: Duration = .seconds(120)

    func migrate() async throws {
        let migrations = Self.migrations
        try await query("SELECT 1")
        try await transaction(timeout: Self.migrationTimeout) { transaction in
            try await transaction.query("SELECT pg_advisory_xact_lock(\(Self.migrationLock))")
            try await transaction.query(
                "CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL)")
            let current = try await transaction.query("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").first?.decode(Int.self) ?? 0
            guard current <= migrations.count else {
                throw StorageError.newerSchema(
                    SchemaMismatch(
                        store: current, known: migrations.count,
                        wayBack: "stop every replica and `pg_restore` the dump taken before the upgrade into an empty database"))
            }
            for (index, statements) in migrations.enumerated() where index + 1 > current {
                for statement in statements { try await transaction.query(PostgresQuery(unsafeSQL: statement)) }
                try await transaction.query("INSERT INTO schema_migrations (version, applied_at) VALUES (\(index + 1), \(Date()))")
            }
        }
    }
}

extension PostgresDatabase {
    /// The JSON body in the first column of the first row, decoded.
    func body<T: Decodable>(_ type: T.Type, _ query: PostgresQuery) async throws -> T? {
        guard let row = try await self.query(query).first else { return nil }
        return try RowCoding.decode(type, text: Self.decoding { try row.decode(String.self) })
    }

    /// The sealed body in the first column of the first row, opened for the row `key` and decoded.
    func sealedBody<T: Decodable>(
        _ type: T.Type, _ column: SealedColumn, key: String, _ keyring: StorageKeyring, _ query: PostgresQuery
    ) async throws -> T? {
        guard let row = try await self.query(query).first else { return nil }
        return try column.open(type, Self.decoding { try row.decode(String.self) }, key: key, with: keyring)
    }

    /// Decodes a row's columns, a failure reported as a corrupt row.
    static func decoding<T>(_ decode: () throws -> T) throws -> T {
        do {
            return try decode()
        } catch {
            throw StorageError.corrupt("\(T.self): \(error)")
        }
    }
}

extension PostgresDatabase: SealedRowAccess {
    /// Table and column names come from `SealedColumn`, never from input.
    func values(of column: SealedColumn) async throws -> [(key: String, value: String)] {
        try await query(
            PostgresQuery(
                unsafeSQL: "SELECT \(column.key)::text, \(column.column)::text FROM \(column.table) WHERE \(column.column) IS NOT NULL")
        ).map { row in try Self.decoding { try row.decode((String, String).self) } }
    }

    func replace(_ column: SealedColumn, key: String, old: String, new: String) async throws {
        var binds = PostgresBindings()
        binds.append(new)
        binds.append(key)
        binds.append(old)
        let cast = column.kind == .sessionBody ? "::jsonb" : ""
        try await query(
            PostgresQuery(
                unsafeSQL: """
                    UPDATE \(column.table) SET \(column.column) = $1\(cast)
                    WHERE \(column.key)::text = $2 AND \(column.column) = $3\(cast)
                    """, binds: binds))
    }
}
