import AsyncHTTPClient
import Foundation
import GatehouseCore
import GatehouseMatrix
import GatehouseDataPlane
import GatehouseStorage
import Logging
import NIOSSL
import ServiceLifecycle

/// What a running gateway keeps from its start to its end, whatever reloads of its configuration happen between: the
/// store and its cache, the event queue, metrics, the HTTP clients and upstream connections, the signing keys, the
/// cookie jars' queue, the listener's certificate and the development provider. Made from the configuration the
/// gateway started with; the parts of a configuration that apply at run time make a `Gateway` over it.
struct GatewayFoundation: Sendable {
    /// The configuration the gateway started with: what a reload cannot change (`ReloadedConfiguration`) stays as here.
    let configuration: GatehouseConfiguration
    let logger: Logger
    /// The stores, reading through this replica's state cache.
    let stores: Stores
    let cache: StateCache
    let invalidations: (any Service)?
    let eventQueue: EventQueue
    let events: EventRecorder
    let metrics: GatewayMetrics
    /// Who opened which app, what was refused, sessions and operators' changes (`audit.*`).
    let audit: AuditTrail
    /// The gateway's spans, when `tracing.otlp_endpoint` names a collector.
    let tracer: GatewayTracer?
    /// Who sent a request, behind the load balancers the operator trusts: for plain requests and WebSocket upgrades.
    let clientAddresses: ClientAddressResolver
    let draining = Draining()
    /// The client for the identity provider, the code sender and provisioning; apps go through `upstreamClients`.
    let http: HTTPClient
    /// The clients of the gateway's own services that have TLS settings of their own (`oidc.tls`,
    /// `registration.code_sender.tls`, `registration.provisioning.tls`), by key path; the others use `http`.
    let serviceClients: [String: HTTPClient]
    let upstreamClients: UpstreamClients
    /// The members' Matrix sessions, when the gateway serves its own chat (`chat.jwt_secret_file`), and the client
    /// their long-polling `/sync`s use (no read timeout of its own, as many connections as members listening).
    let chats: ChatSessions?
    let matrixHTTP: HTTPClient?
    /// The identity providers (`oidc`, or each of its list).
    let providers: IdentityProviders
    let refresher: TokenRefresher
    /// The keys that sign identity assertions (refreshed from the store every minute).
    let assertionKeys: AssertionKeyRing
    /// The members' jars, one change at a time per session; the cookie domains they accept are the running gateway's
    /// (`Gateway.takeOver`, before the first request).
    let jars: SharedCookieJars
    /// The data plane's per-loop upstream connections.
    let upstreamPools: UpstreamPools
    let hostResolver: any HostResolver
    let developmentProvider: DevelopmentIdentityProvider?
    let inbox: DevelopmentInbox?
    /// The apps operators keep in the console, beside the file's.
    let storedCatalog: StoredCatalog
    /// HTTPS on the members' listener (`listen.tls`), its certificate read again on `SIGHUP`.
    let listenerTLS: ListenerTLS?

    init(configuration: GatehouseConfiguration, stores uncached: Stores, renderer: PageRenderer, logger: Logger, hostResolver: any HostResolver)
        async throws
    {
        self.configuration = configuration
        self.logger = logger
        let tracer = try GatewayTracer.make(configuration.tracing)
        self.tracer = tracer
        (cache, invalidations) = uncached.makeCache(logger: logger)
        stores = uncached.cached(by: cache)
        storedCatalog = StoredCatalog(store: stores.catalog, changes: stores.catalogChanges)
        eventQueue = EventQueue(store: stores.events, logger: logger)
        let metrics = GatewayMetrics()
        self.metrics = metrics
        listenerTLS = try configuration.listen.tls.map { try ListenerTLS(configuration: $0, logger: logger) }
        if let tls = listenerTLS {
            // When the certificate expires (for the alert in `deploy/`) and how its reloads went.
            metrics.gauge("gatehouse_tls_certificate_expiry_timestamp_seconds") { tls.notValidAfter.timeIntervalSince1970 }
            metrics.follow("gatehouse_tls_reloads_total", [("result", "succeeded")]) { tls.reloadCounts.succeeded }
            metrics.follow("gatehouse_tls_reloads_total", [("result", "failed")]) { tls.reloadCounts.failed }
        }
        let audit = try AuditTrail(store: stores.audit, configuration: configuration.audit, logger: logger)
        self.audit = audit
        events = EventRecorder(queue: eventQueue, logger: logger, metrics: metrics, audit: audit)
        let (cache, eventQueue) = (cache, eventQueue)
        metrics.follow("gatehouse_session_cache_hits_total") { cache.statistics.hits }
        metrics.follow("gatehouse_session_cache_misses_total") { cache.statistics.misses }
        metrics.follow("gatehouse_session_cache_bypasses_total") { cache.statistics.bypasses }
        metrics.follow("gatehouse_events_dropped_total") { eventQueue.statistics.dropped }
        metrics.follow("gatehouse_event_writes_failed_total") { eventQueue.statistics.failedWrites }
        metrics.gauge("gatehouse_events_waiting") { Double(eventQueue.statistics.waiting) }
        let database = stores.statistics
        metrics.gauge("gatehouse_db_queries_running") { Double(database.current.running) }
        metrics.gauge("gatehouse_db_pool_connections_max") { Double(database.maximumConnections) }
        metrics.follow("gatehouse_db_queries_total") { database.current.queries }
        metrics.follow("gatehouse_db_query_errors_total", [("kind", "unavailable")]) { database.current.unavailable }
        metrics.follow("gatehouse_db_query_errors_total", [("kind", "query")]) { database.current.failed }

        let proxy = configuration.proxy
        var clientConfiguration = HTTPClient.Configuration(
            redirectConfiguration: .disallow,
            timeout: .init(connect: .seconds(Int64(proxy.connectTimeoutSeconds)), read: .seconds(Int64(proxy.readTimeoutSeconds))),
            decompression: .disabled
        )
        clientConfiguration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = proxy.maximumConnectionsPerHost
        // A refused connection fails at once instead of being retried until the connect timeout.
        clientConfiguration.connectionPool.retryConnectionEstablishment = false
        if configuration.developmentMode, let tls = listenerTLS {
            // Development over https: what the gateway asks of its own origin (the Who Am I demo app fetches the published
            // assertion keys) trusts the listener's certificate file, as far as it chains in it (a self-signed
            // certificate, or `gatehouse dev --tls`'s, whose file holds its authority). The built-in provider needs no
            // trust: it is asked in-process (`DevelopmentIdentityProvider.exchange`), however the certificate was issued.
            var trusting = TLSConfiguration.makeClientConfiguration()
            trusting.additionalTrustRoots = [.certificates(tls.chain)]
            clientConfiguration.tlsConfiguration = trusting
        }
        let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: clientConfiguration)
        self.http = http
        var serviceClients: [String: HTTPClient] = [:]
        for (keyPath, tls) in configuration.serviceTLS {
            var own = clientConfiguration
            own.tlsConfiguration = try UpstreamTLS.load(tls, keyPath: keyPath).get()
            serviceClients[keyPath] = HTTPClient(eventLoopGroupProvider: .singleton, configuration: own)
        }
        self.serviceClients = serviceClients
        let chat = configuration.registration.chat
        if chat.servesChat, let homeserver = chat.homeserverURL, let serverName = chat.serverName, let secret = chat.jwtSecret {
            var own = clientConfiguration
            own.timeout = .init(connect: .seconds(Int64(chat.timeoutSeconds)), read: nil)
            own.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 4096
            if let tls = chat.tls { own.tlsConfiguration = try UpstreamTLS.load(tls, keyPath: "chat.tls").get() }
            let matrixHTTP = HTTPClient(eventLoopGroupProvider: .singleton, configuration: own)
            self.matrixHTTP = matrixHTTP
            let features = configuration.features
            chats = ChatSessions(
                client: MatrixClient(http: matrixHTTP, homeserver: homeserver, timeoutSeconds: chat.timeoutSeconds),
                login: LoginToken(secret: secret), serverName: serverName, devices: stores.matrixDevices, sessions: stores.sessions,
                mayChat: { session in features.mayUse(.chats, session) }, logger: logger)
        } else {
            matrixHTTP = nil
            chats = nil
        }
        upstreamClients = UpstreamClients(
            plain: http, configuration: clientConfiguration, retirementDelay: .seconds(Int64(proxy.readTimeoutSeconds + 5)))
        let developmentProvider =
            configuration.developmentMode ? try await DevelopmentIdentityProvider(configuration: configuration, renderer: renderer) : nil
        self.developmentProvider = developmentProvider
        let providers = IdentityProviders(
            configuration.providers, builtIn: developmentProvider.map { ($0.issuer, $0.exchange) }) { keyPath in serviceClients[keyPath] ?? http }
        self.providers = providers
        // Every refresh at the provider is counted and logged (never its tokens).
        let refresher = TokenRefresher(
            store: stores.sessions, window: TimeInterval(configuration.session.refreshWindowSeconds),
            interval: TimeInterval(configuration.oidc.refreshSeconds),
            identify: { session, response throws(OIDCError) in
                try await providers.client(for: session).refreshedIdentity(of: session, response: response)
            }
        ) { session, token throws(OIDCError) in
            do throws(OIDCError) {
                let response = try await tracer.span("token refresh", ofKind: .client) { () async throws(OIDCError) -> TokenResponse in
                    try await providers.client(for: session).refresh(refreshToken: token)
                }
                metrics.tokenRefresh(failure: nil)
                logger.info("tokens refreshed")
                return response
            } catch {
                metrics.tokenRefresh(failure: error)
                logger.notice("token refresh failed", metadata: ["reason": .string(error.reason)])
                throw error
            }
        }
        self.refresher = refresher
        self.hostResolver = hostResolver
        assertionKeys = try AssertionKeyRing.make(configuration.assertions, store: stores.assertionKeys, logger: logger)
        jars = SharedCookieJars(store: stores.jars, cache: cache)
        clientAddresses = ClientAddressResolver(trustedProxies: configuration.listen.trustedProxies)
        upstreamPools = UpstreamPools(
            limits: .init(
                maximumConnections: proxy.maximumConnectionsPerHost, idleTimeout: .seconds(60),
                connectTimeout: .seconds(Int64(proxy.connectTimeoutSeconds))))
        inbox = configuration.developmentMode ? DevelopmentInbox() : nil
    }
}
