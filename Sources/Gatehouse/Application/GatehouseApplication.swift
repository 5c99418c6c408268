import Foundation
import GatehouseCore
import GatehouseStorage
import Hummingbird
import HummingbirdCore
import Logging
import ServiceLifecycle
import UnixSignals

/// The composition root: the only place that sees every part of the gateway. `Gateway` makes the parts,
/// `buildRouter` lays out the request's way through them, `buildApplication` adds the server and the background
/// services.
public enum GatehouseApplication {
    /// What a started gateway tells its operator (and what the tests use).
    public struct Built {
        public let application: Application<CurrentResponder>
        public let developmentPassword: String?
        /// This replica's sessions and jars in memory.
        public let stateCache: StateCache
        /// Product events on their way to the store.
        public let events: EventQueue
        /// What `/metrics` reports.
        public let metrics: GatewayMetrics
        /// Set when a graceful shutdown begins.
        public let draining: Draining
        /// The members' listener's certificate, when it serves HTTPS.
        let listenerTLS: ListenerTLS?
        /// The stores the gateway runs on, behind its state cache (for tests that look at what is stored).
        let stores: Stores
        /// The gateway new requests go to.
        let running: RunningGateway
        /// Reads the configuration again (on `SIGHUP`, or when its file changes) and applies it.
        let reloads: ConfigurationApplier
        let drain: Duration
        let shutdownGrace: Duration
        let logger: Logger

        /// Runs the gateway until `SIGTERM` or `SIGINT`, then shuts down gracefully: for `listen.drain_seconds` not
        /// ready but still serving, every answer with `Connection: close`; then no new connections, and requests in
        /// flight (downloads, WebSockets, which are closed as "going away") get `listen.shutdown_grace_seconds` to
        /// finish; waiting events are stored, the store closes.
        public func run() async throws {
            try await serviceGroup(signals: [.sigterm, .sigint]).run()
            if let elapsed = draining.elapsed, elapsed >= drain + shutdownGrace {
                logger.warning(
                    "shutdown complete: requests still running after the grace period were cut",
                    metadata: ["grace_seconds": "\(shutdownGrace.components.seconds)"])
            } else {
                logger.notice("shutdown complete")
            }
        }

        /// The application and, after it, the service that hears of a shutdown first (a group signals its services
        /// in reverse order) and marks the gateway as draining.
        public func serviceGroup(signals: [UnixSignal]) -> ServiceGroup {
            var configuration = ServiceGroupConfiguration(
                services: [
                    .init(service: application),
                    .init(service: DrainingService(draining: draining, drain: drain, grace: shutdownGrace, logger: logger)),
                ],
                gracefulShutdownSignals: signals, logger: logger)
            configuration.maximumGracefulShutdownDuration = drain + shutdownGrace
            return ServiceGroup(configuration: configuration)
        }
    }

    /// `source`, when given, is read again on `SIGHUP` and when its file changes (`ReloadedConfiguration` says what applies).
    public static func build(configuration: GatehouseConfiguration, source: ConfigurationSource? = nil, logger: Logger) async throws -> Built {
        try await build(configuration: configuration, source: source, logger: logger, hostResolver: SystemHostResolver())
    }

    static func build(
        configuration: GatehouseConfiguration, source: ConfigurationSource? = nil, logger: Logger, hostResolver: any HostResolver
    ) async throws -> Built {
        let renderer = try await PageRenderer.load(configuration: configuration)
        let stores = try await Stores.open(configuration.storage, logger: logger)
        return try await build(
            configuration: configuration, source: source, stores: stores, renderer: renderer, logger: logger, hostResolver: hostResolver)
    }

    static func build(
        configuration: GatehouseConfiguration, source: ConfigurationSource? = nil, stores: Stores, renderer: PageRenderer, logger: Logger,
        hostResolver: any HostResolver = SystemHostResolver()
    ) async throws -> Built {
        let gateway = try await Gateway(configuration: configuration, stores: stores, renderer: renderer, logger: logger, hostResolver: hostResolver)
        let foundation = gateway.foundation
        let running = RunningGateway(gateway)
        let reloads = ConfigurationApplier(running: running, source: source)
        return Built(
            application: buildApplication(running, reloads: reloads, watching: source?.file),
            developmentPassword: foundation.developmentProvider?.demoPassword, stateCache: foundation.cache, events: foundation.eventQueue,
            metrics: foundation.metrics, draining: foundation.draining, listenerTLS: foundation.listenerTLS, stores: foundation.stores,
            running: running, reloads: reloads,
            drain: .seconds(Int64(configuration.listen.drainSeconds)), shutdownGrace: .seconds(Int64(configuration.listen.shutdownGraceSeconds)),
            logger: logger)
    }

    /// The server (HTTP/1 with WebSocket upgrades, behind the framing guard) and the services that run beside it.
    static func buildApplication(_ running: RunningGateway, reloads: ConfigurationApplier, watching file: String?) -> Application<CurrentResponder> {
        let gateway = running.gateway
        let foundation = gateway.foundation
        let configuration = gateway.configuration
        let stores = foundation.stores
        // Stopped in reverse order: the event queue is flushed before the store closes.
        var services: [any Service] = [
            stores.service,
            foundation.eventQueue,
            foundation.audit,
            HTTPClientService(
                clients: [foundation.http] + foundation.serviceClients.values + [foundation.matrixHTTP].compactMap { $0 }, upstreamClients: foundation.upstreamClients,
                upstreamPools: foundation.upstreamPools),
            JarWriteBehind(jars: foundation.jars, cache: foundation.cache, metrics: foundation.metrics, logger: foundation.logger),
            ExpirySweeper(
                sessions: stores.sessions, attempts: stores.attempts, handoffs: stores.hostMounts, flows: stores.flows,
                logoutTokens: stores.logoutTokens, rateLimits: stores.rateLimits, keptForms: stores.keptForms, audit: stores.audit,
                members: stores.members, auditRetention: TimeInterval(configuration.audit.retentionDays) * 86_400, rules: configuration.registration.rules,
                configuration: configuration.session,
                logger: foundation.logger),
        ]
        services.append(
            StoreGauges(
                prepared: stores.prepare, sessions: stores.sessions, registrations: stores.registrations, session: configuration.session,
                maximumProvisioningAttempts: configuration.registration.provisioning.maximumAttempts, metrics: foundation.metrics,
                logger: foundation.logger))
        if let invalidations = foundation.invalidations { services.append(invalidations) }
        if let chats = foundation.chats {
            services.append(MatrixDeviceReaper(chats: chats, logger: foundation.logger))
            if let admin = gateway.chatBackend as? SynapseChatBackend {
                services.append(StoryReaper(admin: admin, chats: chats, lifetime: configuration.registration.chat.storyLifetime, logger: foundation.logger))
            }
        }
        services.append(ConfigurationWatcher(reloads: reloads, file: file, tls: foundation.listenerTLS))
        if let tls = foundation.listenerTLS { services.append(TLSReloader(tls: tls)) }
        if let tracer = foundation.tracer { services.append(tracer.service) }
        services.append(AssertionKeyRefresher(ring: foundation.assertionKeys, metrics: foundation.metrics, logger: foundation.logger))
        if let port = configuration.listen.redirectHTTPPort {
            services.append(
                HTTPRedirectServer.application(
                    publicOrigin: configuration.publicOrigin, host: configuration.listen.host, port: port, logger: foundation.logger))
        }
        if let endpoint = configuration.registration.provisioning.endpoint {
            services.append(
                ProvisioningWebhook(
                    store: stores.registrations, http: foundation.serviceClients["registration.provisioning.tls"] ?? foundation.http,
                    configuration: configuration.registration.provisioning, endpoint: endpoint,
                    logger: foundation.logger))
        }
        if let metrics = configuration.metrics {
            services.append(MetricsServer.application(foundation.metrics, configuration: metrics, logger: foundation.logger))
        }
        if let port = configuration.demoAppsPort {
            services.append(
                DemoApps.application(
                    port: port, keysURL: configuration.publicOrigin + Paths.assertionKeys, http: foundation.http, logger: foundation.logger))
        }
        var application = Application(
            responder: CurrentResponder(running: running),
            server: server(configuration, running: running),
            configuration: .init(
                address: .hostname(configuration.listen.host, port: configuration.listen.port), serverName: configuration.brand.gatewayName,
                // Room for a burst of connections while they are accepted (the kernel caps it at `somaxconn`): with
                // Hummingbird's 256, a burst beyond it waits a second for the SYN to be sent again.
                backlog: 4096),
            services: services,
            logger: foundation.logger
        )
        application.beforeServerStarts(perform: stores.prepare)
        // The console's apps are served from the first request on.
        application.beforeServerStarts { await reloads.reloadCatalog() }
        // Members are served with the keys in place: the first is made now if the store holds none.
        application.beforeServerStarts { [ring = foundation.assertionKeys] in try await ring.refresh() }
        return application
    }

    /// HTTP/1 with WebSocket upgrades, read by the gateway's own reader with the configuration's limits, and the
    /// framing guard and the data plane after it; behind TLS when the listener has a certificate; each connection admitted by the listener's
    /// connection limits first.
    static func server(_ configuration: GatehouseConfiguration, running: RunningGateway) -> HTTPServerBuilder {
        let gateway = running.gateway
        let foundation = gateway.foundation
        let listen = configuration.listen
        let limits = RequestFramingGuard.Limits(
            headerTimeout: .seconds(Int64(listen.headerTimeoutSeconds)), idleTimeout: .seconds(Int64(listen.idleTimeoutSeconds)),
            bodyTimeout: .seconds(Int64(listen.bodyTimeoutSeconds)), sendTimeout: .seconds(Int64(listen.sendTimeoutSeconds)),
            reader: .init(
                maximumTargetBytes: listen.maximumRequestTargetBytes, maximumFieldBytes: listen.maximumHeaderBytes, maximumFieldCount: 256))
        let current = CurrentRoutes(running: running)
        let dataPlane = MemberDataPlane(
            routes: current, upgrades: current, pools: foundation.upstreamPools,
            readTimeout: .seconds(Int64(configuration.proxy.readTimeoutSeconds)))
        let admission = ConnectionAdmission(listen)
        foundation.metrics.gauge("gatehouse_connections_open") { Double(admission.open) }
        for reason in ConnectionAdmission.Refusal.allCases {
            foundation.metrics.follow("gatehouse_connections_refused_total", [("reason", reason.rawValue)]) { admission.refused(reason) }
        }
        return HTTPServerBuilder { responder in
            let http = MemberHTTP1Channel(responder: responder, limits: limits, draining: foundation.draining, dataPlane: dataPlane)
            guard let tls = foundation.listenerTLS else { return AdmittedChannel(inner: http, admission: admission) }
            let http2 =
                tls.configuration.http2
                ? MemberHTTP2Channel(responder: responder, dataPlane: dataPlane, idleTimeout: .seconds(Int64(listen.idleTimeoutSeconds))) : nil
            return AdmittedChannel(inner: ListenerTLSChannel(http1: http, http2: http2, tls: tls), admission: admission)
        }
    }

    /// Seals what the store holds in clear and moves values of older keys to the sealing key, for
    /// `gatehouse storage reseal` (the gateway's start does the same).
    public static func resealStore(configuration: GatehouseConfiguration, logger: Logger) async throws -> ResealReport {
        try await Stores.open(configuration.storage, logger: logger).reseal()
    }

    /// A consistent copy of the SQLite store, for `gatehouse storage backup`; PostgreSQL is backed up with its own
    /// tools (`pg_dump`).
    public static func backupStore(configuration: GatehouseConfiguration, to file: String, logger: Logger) async throws -> StoreInventory {
        try await SQLiteBackup.backup(
            store: try sqlitePath(configuration.storage, doing: "backup"), to: file, keyring: try configuration.storage.keys.keyring(), logger: logger)
    }

    /// The backup `file` put in place of a missing SQLite store, for `gatehouse storage restore`.
    public static func restoreStore(configuration: GatehouseConfiguration, from file: String, logger: Logger) async throws -> StoreInventory {
        try await SQLiteBackup.restore(
            from: file, to: try sqlitePath(configuration.storage, doing: "restore"), keyring: try configuration.storage.keys.keyring(), logger: logger)
    }

    private static func sqlitePath(_ storage: StorageConfiguration, doing command: String) throws -> String {
        guard storage.kind == .sqlite else {
            throw BackupRefusal(
                "`gatehouse storage \(command)` works on SQLite; PostgreSQL's store is backed up with pg_dump and restored with pg_restore (docs/operations.md, \"Backup and restore\")")
        }
        return storage.sqlitePath
    }

    /// The funnel report straight from the store, for `gatehouse funnel`.
    public static func funnelReport(configuration: GatehouseConfiguration, window: DateInterval, logger: Logger) async throws -> FunnelReport {
        try await Stores.open(configuration.storage, logger: logger).whileRunning { stores in
            try await FunnelController(events: stores.events, registrations: stores.registrations, configuration: configuration).report(window)
        }
    }
}
