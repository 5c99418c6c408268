import Foundation
import Logging
import NIOConcurrencyHelpers
import ServiceLifecycle

/// Every store the gateway keeps state in, from one backend (`storage.kind`).
public struct Stores: Sendable {
    public var sessions: any SessionStore
    public var jars: any CookieJarStore
    public var attempts: any LoginAttemptStore
    public var hostMounts: any HostMountStore
    public var registrations: any RegistrationStore
    public var flows: any RegistrationFlowStore
    public var events: any EventStore
    public var logoutTokens: any LogoutTokenStore
    public var rateLimits: any RateLimitStore
    public var assertionKeys: any AssertionKeyStore
    public var keptForms: any KeptFormStore
    public var audit: any AuditStore
    public var catalog: any AppCatalogStore
    public var members: any MemberStore
    public var matrixDevices: any MatrixDeviceStore
    /// Changes to `catalog` made by other replicas (PostgreSQL).
    public let catalogChanges = CatalogChanges()
    /// Runs while the gateway serves and closes the backend when it stops (first in the service list, so it stops
    /// after everything that uses it).
    package var service: any Service
    /// Makes the backend ready (PostgreSQL's migrations, then sealing what is stored in clear): once, however many
    /// ask — the server before it accepts requests, and background services before their first query, which may
    /// start before the server does.
    package var prepare: @Sendable () async throws -> Void { { _ = try await preparation.run() } }
    private let preparation: Once<ResealReport>
    /// Whether the backend answers now, quickly (`/readyz`: a balancer waits a second or two, not a query's deadline).
    package var answers: @Sendable () async -> Bool
    /// What the backend has been asked (the metrics' database figures).
    package var statistics: DatabaseStatistics
    /// The database replicas share, if any: its changes reach each replica's cache through a listener.
    package var shared: PostgresDatabase? = nil
    /// Whether replicas share these stores (PostgreSQL): what one writes, the others read.
    public var isShared: Bool { shared != nil }
    /// The SQLite file, when that is the backend (tests reach its connection to make faults).
    package var sqlite: SQLiteDatabase? = nil
    /// The keys the stores seal secrets with.
    package var keyring: StorageKeyring

    public static func sqlite(_ database: SQLiteDatabase, keyring: StorageKeyring) -> Stores {
        Stores(
            sessions: SQLiteSessionStore(database: database, keyring: keyring),
            jars: SQLiteCookieJarStore(database: database, keyring: keyring),
            attempts: SQLiteLoginAttemptStore(database: database, keyring: keyring), hostMounts: SQLiteHostMountStore(database: database),
            registrations: SQLiteRegistrationStore(database: database, keyring: keyring),
            flows: SQLiteRegistrationFlowStore(database: database, keyring: keyring),
            events: SQLiteEventStore(database: database), logoutTokens: SQLiteLogoutTokenStore(database: database),
            rateLimits: MemoryRateLimitStore(), assertionKeys: SQLiteAssertionKeyStore(database: database, keyring: keyring),
            keptForms: SQLiteKeptFormStore(database: database, keyring: keyring), audit: SQLiteAuditStore(database: database),
            catalog: SQLiteAppCatalogStore(database: database), members: SQLiteMemberStore(database: database, keyring: keyring),
            matrixDevices: SQLiteMatrixDeviceStore(database: database, keyring: keyring),
            service: DatabaseService(database: database), preparation: Once { try await reseal(database, keyring) },
            answers: { await database.answers() }, statistics: database.statistics, sqlite: database, keyring: keyring)
    }

    public static func postgres(_ database: PostgresDatabase, keyring: StorageKeyring) -> Stores {
        Stores(
            sessions: PostgresSessionStore(database: database, keyring: keyring),
            jars: PostgresCookieJarStore(database: database, keyring: keyring),
            attempts: PostgresLoginAttemptStore(database: database, keyring: keyring),
            hostMounts: PostgresHostMountStore(database: database),
            registrations: PostgresRegistrationStore(database: database, keyring: keyring),
            flows: PostgresRegistrationFlowStore(database: database, keyring: keyring),
            events: PostgresEventStore(database: database), logoutTokens: PostgresLogoutTokenStore(database: database),
            rateLimits: PostgresRateLimitStore(database: database),
            assertionKeys: PostgresAssertionKeyStore(database: database, keyring: keyring),
            keptForms: PostgresKeptFormStore(database: database, keyring: keyring), audit: PostgresAuditStore(database: database),
            catalog: PostgresAppCatalogStore(database: database), members: PostgresMemberStore(database: database, keyring: keyring),
            matrixDevices: PostgresMatrixDeviceStore(database: database, keyring: keyring),
            service: database,
            preparation: Once {
                try await database.migrate()
                return try await reseal(database, keyring)
            },
            answers: { await database.answers(within: .seconds(1)) },
            statistics: database.statistics,
            shared: database, keyring: keyring)
    }

    /// Seals what an older version stored in clear and moves values of older keys to the sealing key, before the
    /// gateway serves (every replica does it at its start; the changes are compare-and-set, so replicas starting
    /// together do not undo each other's).
    private static func reseal(_ access: some SealedRowAccess, _ keyring: StorageKeyring) async throws -> ResealReport {
        let report = try await Resealing.run(access, keyring: keyring)
        if report != ResealReport() { Logger(label: "gatehouse.storage").notice("stored secrets resealed: \(report)") }
        return report
    }

    /// Prepares the store as the gateway's start does, for `gatehouse storage reseal`: what resealing did.
    public func reseal() async throws -> ResealReport {
        try await GatehouseStorage.whileRunning(service) { try await preparation.run() }
    }

    /// The stores `configuration` names, opened (SQLite) or ready to run (PostgreSQL).
    public static func open(_ configuration: StorageConfiguration, logger: Logger) async throws -> Stores {
        let keyring = try configuration.keys.keyring()
        switch configuration.kind {
        case .sqlite:
            return .sqlite(try await SQLiteDatabase.open(path: configuration.sqlitePath, logger: logger), keyring: keyring)
        case .postgres:
            guard let url = configuration.postgresURL else { throw StorageError.unavailable("storage.postgres_url is not set") }
            return .postgres(try PostgresDatabase(url: url, logger: logger), keyring: keyring)
        }
    }

    /// Runs `body` with the backend running and ready, for commands that use the store without serving.
    public func whileRunning<T: Sendable>(_ body: (Stores) async throws -> T) async throws -> T {
        try await GatehouseStorage.whileRunning(service) {
            try await prepare()
            return try await body(self)
        }
    }
}

/// Runs `body` while `service` runs, then stops the service (by cancelling it) and waits for it.
func whileRunning<T: Sendable>(_ service: any Service, _ body: () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: Void.self) { tasks in
        tasks.addTask { try await service.run() }
        defer { tasks.cancelAll() }
        return try await body()
    }
}

/// Runs `body` the first time it is asked to; every later caller waits for that run and shares its outcome.
final class Once<Value: Sendable>: Sendable {
    private let body: @Sendable () async throws -> Value
    private let task = NIOLockedValueBox<Task<Value, any Error>?>(nil)

    init(_ body: @escaping @Sendable () async throws -> Value) { self.body = body }

    @Sendable func run() async throws -> Value {
        let body = self.body
        let running = task.withLockedValue { task in
            if let task { return task }
            let started = Task { try await body() }
            task = started
            return started
        }
        return try await running.value
    }
}
