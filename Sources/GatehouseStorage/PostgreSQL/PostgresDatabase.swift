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

    /// Runs the pool until the gateway stops (after the server, which is stopped first).
    public func run() async throws {
        await cancelWhenGracefulShutdown { await self.client.run() }
    }

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

    func migrate() async throws {
        let migrations = Self.migrations
        try await transaction { transaction in
            try await transaction.query("SELECT pg_advisory_xact_lock(\(Self.migrationLock))")
            try await transaction.query(
                "CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL)")
            let current = try await transaction.query("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").first?.decode(Int.self) ?? 0
            for (index, statements) in migrations.enumerated() where index + 1 > current {
                for statement in statements { try await transaction.query(PostgresQuery(unsafeSQL: statement)) }
                try await transaction.query("INSERT INTO schema_migrations (version, applied_at) VALUES (\(index + 1), \(Date()))")
            }
        }
    }

    /// Each migration is a list of statements (the extended protocol takes one statement per query). The tables
    /// are SQLite's, in PostgreSQL's types; the registration trigger does what SQLite's does.
    static let migrations: [[String]] = [
        [
            """
            CREATE TABLE sessions (
                id text PRIMARY KEY,
                sub text NOT NULL,
                body jsonb NOT NULL,
                last_seen_at timestamptz NOT NULL,
                expires_at timestamptz NOT NULL
            )
            """,
            "CREATE INDEX sessions_sub ON sessions (sub)",
            "CREATE TABLE login_attempts (state text PRIMARY KEY, body text NOT NULL, created_at timestamptz NOT NULL)",
            """
            CREATE TABLE registrations (
                sub text PRIMARY KEY,
                username text NOT NULL,
                registered_at timestamptz NOT NULL,
                phone_number text,
                display_name text,
                discoverability text NOT NULL DEFAULT 'nobody',
                pin_hash text,
                provisioned_at timestamptz,
                provision_attempts integer NOT NULL DEFAULT 0,
                provision_next_at timestamptz,
                provision_error text
            )
            """,
            // Usernames are ASCII (`Username`), so lower() is SQLite's NOCASE.
            "CREATE UNIQUE INDEX registrations_username ON registrations (lower(username))",
            "CREATE TABLE events (id bigserial PRIMARY KEY, name text NOT NULL, sub text, detail text, at timestamptz NOT NULL)",
            "CREATE INDEX events_at ON events (at)",
            """
            CREATE TABLE cookie_jars (
                session_id text PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
                body text NOT NULL,
                updated_at timestamptz NOT NULL
            )
            """,
            """
            CREATE TABLE app_handoffs (
                code_hash text PRIMARY KEY,
                session_id text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
                body text NOT NULL,
                expires_at timestamptz NOT NULL
            )
            """,
            """
            CREATE TABLE app_grants (
                token_hash text PRIMARY KEY,
                session_id text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
                slug text NOT NULL,
                created_at timestamptz NOT NULL
            )
            """,
            "CREATE INDEX app_grants_session ON app_grants (session_id)",
            "CREATE TABLE registration_flows (sub text PRIMARY KEY, body text NOT NULL, updated_at timestamptz NOT NULL)",
            """
            CREATE TABLE verification_sends (
                id bigserial PRIMARY KEY, sub text NOT NULL, phone_number text NOT NULL, at timestamptz NOT NULL
            )
            """,
            "CREATE INDEX verification_sends_sub ON verification_sends (sub, at)",
            "CREATE INDEX verification_sends_phone ON verification_sends (phone_number, at)",
            """
            CREATE TABLE code_attempts (
                code_id text PRIMARY KEY, sub text NOT NULL, attempts integer NOT NULL, created_at timestamptz NOT NULL
            )
            """,
            """
            CREATE FUNCTION registration_completes() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                UPDATE sessions SET body = jsonb_set(body, '{level}', '"registered"') WHERE sub = NEW.sub;
                DELETE FROM registration_flows WHERE sub = NEW.sub;
                RETURN NULL;
            END
            $$
            """,
            """
            CREATE TRIGGER registration_completes AFTER INSERT ON registrations
            FOR EACH ROW EXECUTE FUNCTION registration_completes()
            """,
        ],
        // Every change to a session or a jar, from any replica (and the registration trigger, and the cascade of a
        // deleted session), tells every replica's `StateInvalidationListener` at commit.
        [
            """
            CREATE FUNCTION session_changed() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                PERFORM pg_notify('\(StateInvalidationListener.channel)', 's' || OLD.id);
                RETURN NULL;
            END
            $$
            """,
            "CREATE TRIGGER session_changed AFTER UPDATE OR DELETE ON sessions FOR EACH ROW EXECUTE FUNCTION session_changed()",
            """
            CREATE FUNCTION jar_changed() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF TG_OP = 'DELETE' THEN
                    PERFORM pg_notify('\(StateInvalidationListener.channel)', 'j' || OLD.session_id);
                ELSE
                    PERFORM pg_notify('\(StateInvalidationListener.channel)', 'j' || NEW.session_id);
                END IF;
                RETURN NULL;
            END
            $$
            """,
            "CREATE TRIGGER jar_changed AFTER INSERT OR UPDATE OR DELETE ON cookie_jars FOR EACH ROW EXECUTE FUNCTION jar_changed()",
        ],
        // Back-channel logout: the provider's session of each session, and the logout tokens already honoured.
        [
            "ALTER TABLE sessions ADD COLUMN sid text",
            "CREATE INDEX sessions_sid ON sessions (sid)",
            """
            CREATE TABLE logout_tokens (
                issuer text NOT NULL, jti text NOT NULL, expires_at timestamptz NOT NULL, PRIMARY KEY (issuer, jti)
            )
            """,
        ],
        // Rate limits every replica counts against: unlogged, as a crash that forgets them loses nothing worth a WAL write.
        ["CREATE UNLOGGED TABLE rate_limits (key text PRIMARY KEY, used_until double precision NOT NULL)"],
        // The keys that sign identity assertions, one per generation, the same for every replica.
        ["CREATE TABLE assertion_keys (generation integer PRIMARY KEY, private_key text NOT NULL, signs_from timestamptz NOT NULL)"],
        // Sessions ended from another of their member's browsers, remembered until they would have expired.
        ["CREATE TABLE ended_sessions (id text PRIMARY KEY, until timestamptz NOT NULL)"],
        // The Matrix ID a chat backend made, and the usernames members hold while they finish the upgrade.
        [
            "ALTER TABLE registrations ADD COLUMN chat_user_id text",
            "CREATE TABLE username_claims (username_key text PRIMARY KEY, sub text NOT NULL, claimed_at timestamptz NOT NULL)",
            "CREATE INDEX username_claims_sub ON username_claims (sub)",
            """
            CREATE FUNCTION registration_releases_claims() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                DELETE FROM username_claims WHERE sub = NEW.sub;
                RETURN NULL;
            END
            $$
            """,
            """
            CREATE TRIGGER registration_releases_claims AFTER INSERT ON registrations
            FOR EACH ROW EXECUTE FUNCTION registration_releases_claims()
            """,
        ],
    ]
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
