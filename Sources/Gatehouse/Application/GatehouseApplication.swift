import AsyncHTTPClient
import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import ServiceLifecycle

/// The composition root: the only place that sees every part of the gateway.
public enum GatehouseApplication {
    /// What a started gateway tells its operator (and what the tests use).
    public struct Built {
        public let application: Application<RouterResponder<GatewayRequestContext>>
        public let developmentPassword: String?
        /// This replica's sessions and jars in memory.
        public let stateCache: StateCache
        /// Product events on their way to the store.
        public let events: EventQueue
    }

    public static func build(configuration: GatehouseConfiguration, logger: Logger) async throws -> Built {
        try await build(configuration: configuration, logger: logger, hostResolver: SystemHostResolver())
    }

    static func build(configuration: GatehouseConfiguration, logger: Logger, hostResolver: any HostResolver) async throws -> Built {
        let renderer = try await PageRenderer.load(configuration: configuration)
        let stores = try await Stores.open(configuration.storage, logger: logger)
        return try await build(configuration: configuration, stores: stores, renderer: renderer, logger: logger, hostResolver: hostResolver)
    }

    static func build(
        configuration: GatehouseConfiguration, stores: Stores, renderer: PageRenderer, logger: Logger,
        hostResolver: any HostResolver = SystemHostResolver()
    ) async throws -> Built {
        let (cache, invalidations) = stores.makeCache(logger: logger)
        let stores = stores.cached(by: cache)
        let sessions = stores.sessions
        let attempts = stores.attempts
        let registrations = stores.registrations
        let flows = stores.flows
        let eventStore = stores.events
        let eventQueue = EventQueue(store: eventStore, logger: logger)
        let events = EventRecorder(queue: eventQueue, logger: logger)

        let proxy = configuration.proxy
        var clientConfiguration = HTTPClient.Configuration(
            redirectConfiguration: .disallow,
            timeout: .init(connect: .seconds(Int64(proxy.connectTimeoutSeconds)), read: .seconds(Int64(proxy.readTimeoutSeconds))),
            decompression: .disabled
        )
        clientConfiguration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = proxy.maximumConnectionsPerHost
        // A refused connection fails at once instead of being retried until the connect timeout.
        clientConfiguration.connectionPool.retryConnectionEstablishment = false
        let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: clientConfiguration)
        let upstreamClients = UpstreamClients(
            plain: http, configuration: clientConfiguration, retirementDelay: .seconds(Int64(proxy.readTimeoutSeconds + 5)))
        let oidc = OIDCClient(configuration: configuration.oidc, http: http)
        let refresher = TokenRefresher(store: sessions, window: TimeInterval(configuration.session.refreshWindowSeconds)) { token throws(OIDCError) in
            try await oidc.refresh(refreshToken: token)
        }
        let resolver = SessionResolver(store: sessions, refresher: refresher, events: events, configuration: configuration.session, logger: logger)

        let appsDomain = configuration.appsDomain.map { AppsDomain(domain: $0, publicURL: configuration.publicURL) }
        let catalog = AppCatalog(apps: configuration.apps, publicOrigin: configuration.publicOrigin, appsDomain: appsDomain)
        let allowlist = Allowlist(configuration.allowlist)
        let upstreamPolicy = UpstreamPolicy(allowlist: allowlist, configuration: proxy, resolver: hostResolver)
        let jars = SharedCookieJars(
            store: stores.jars, domains: CookieDomainPolicy(allowlist: allowlist, boundaries: proxy.cookieBoundaries))
        let banner = UpgradeBanner(renderer: renderer, events: events)
        // The one gate every way into an app asks: paths, app hosts (through the proxy) and WebSocket upgrades.
        let access = AppAccess(catalog: catalog, policy: upstreamPolicy, configuration: configuration)
        let proxyController = ProxyController(
            catalog: catalog, forwarder: Forwarder(clients: upstreamClients, configuration: proxy), access: access, jars: jars,
            banner: banner,
            configuration: configuration
        )
        let hostMountStore = stores.hostMounts
        let hostMounts = HostMountController(
            catalog: catalog, proxy: proxyController, store: hostMountStore, resolver: resolver, configuration: configuration
        )

        let router = Router(context: GatewayRequestContext.self)
        router.add(middleware: LogRequestsMiddleware(.info))
        router.add(
            middleware: SecurityHeadersMiddleware(
                identityProviderOrigin: URL(string: configuration.oidc.issuer).flatMap(origin), isHTTPS: configuration.isHTTPS))
        router.add(middleware: ErrorPageMiddleware(renderer: renderer))
        router.add(middleware: HostMountMiddleware(controller: hostMounts))
        router.add(middleware: FileMiddleware(configuration.directories.publicFiles, urlBasePath: Paths.publicAssets, searchForIndexHtml: false))
        router.get(RouterPath(stringLiteral: Paths.health)) { _, _ in
            Response(status: .ok, headers: [.contentType: "text/plain"], body: .init(byteBuffer: ByteBuffer(string: "ok\n")))
        }
        router.get(RouterPath(stringLiteral: Paths.ready)) { _, _ -> Response in
            guard await stores.answers() else {
                return Response(
                    status: .serviceUnavailable,
                    headers: [.contentType: "text/plain", .retryAfter: ErrorPageMiddleware<GatewayRequestContext>.retryAfterSeconds],
                    body: .init(byteBuffer: ByteBuffer(string: "storage unavailable\n")))
            }
            return Response(status: .ok, headers: [.contentType: "text/plain"], body: .init(byteBuffer: ByteBuffer(string: "ready\n")))
        }

        var developmentPassword: String?
        if configuration.developmentMode {
            let provider = try await DevelopmentIdentityProvider(configuration: configuration, renderer: renderer)
            provider.addRoutes(to: router)
            developmentPassword = provider.demoPassword
        }

        BackChannelLogoutController(
            verifier: oidc.verifier, sessions: sessions, logoutTokens: stores.logoutTokens, events: events
        ).addRoutes(to: router)

        let withSession = router.group().add(middleware: SessionMiddleware(resolver: resolver, cookieName: configuration.cookie.name))
        let auth = AuthController(
            configuration: configuration, oidc: oidc, attempts: attempts, sessions: sessions, registrations: registrations, events: events,
            renderer: renderer
        )
        auth.addRoutes(to: withSession)
        let signedIn = withSession.group(context: SignedInRequestContext.self)
        PortalController(catalog: catalog, renderer: renderer, features: configuration.features).addRoutes(to: signedIn)
        let inbox = configuration.developmentMode ? DevelopmentInbox() : nil
        RegistrationController(
            flows: flows, registrations: registrations,
            sender: codeSender(configuration, http: http, inbox: inbox, logger: logger),
            hasher: PINHasher(cost: UInt8(configuration.registration.pinBcryptCost)), events: events, renderer: renderer,
            configuration: configuration,
            inbox: inbox
        ).addRoutes(to: signedIn)
        FunnelController(events: eventStore, queue: eventQueue, registrations: registrations, configuration: configuration, strings: renderer.strings)
            .addRoutes(
                to: signedIn)
        proxyController.addRoutes(to: signedIn)
        hostMounts.addRoutes(to: signedIn)
        let webSockets = WebSocketProxy(
            catalog: catalog, access: access, jars: jars, resolver: resolver, sessions: sessions, hostMounts: hostMountStore,
            configuration: configuration, logger: logger
        )

        // Stopped in reverse order: the event queue is flushed before the store closes.
        var services: [any Service] = [
            stores.service,
            eventQueue,
            HTTPClientService(client: http, upstreamClients: upstreamClients),
            ExpirySweeper(
                sessions: sessions, attempts: attempts, handoffs: hostMountStore, flows: flows, logoutTokens: stores.logoutTokens,
                rules: configuration.registration.rules,
                configuration: configuration.session, logger: logger),
        ]
        if let invalidations { services.append(invalidations) }
        if let endpoint = configuration.registration.provisioning.endpoint {
            services.append(
                ProvisioningWebhook(
                    store: registrations, http: http, configuration: configuration.registration.provisioning, endpoint: endpoint, logger: logger))
        }
        if let port = configuration.demoAppsPort {
            services.append(DemoApps.application(port: port, logger: logger))
        }
        var application = Application(
            router: router,
            server: server(configuration.listen, webSockets: webSockets),
            configuration: .init(
                address: .hostname(configuration.listen.host, port: configuration.listen.port), serverName: configuration.brand.gatewayName),
            services: services,
            logger: logger
        )
        application.beforeServerStarts(perform: stores.prepare)
        return Built(application: application, developmentPassword: developmentPassword, stateCache: cache, events: eventQueue)
    }

    /// HTTP/1 with WebSocket upgrades, its decoder's limits from the configuration, and the framing guard after it.
    static func server(_ listen: ListenConfiguration, webSockets: WebSocketProxy) -> HTTPServerBuilder {
        let decoder = HTTP1Channel.Configuration.DecoderConfiguration(
            maxHeaderFieldSize: listen.maximumHeaderBytes, maxHeaderListSize: listen.maximumHeaderBytes, maxHeaderFieldCount: 256)
        let limits = RequestFramingGuard.Limits(
            headerTimeout: .seconds(Int64(listen.headerTimeoutSeconds)), idleTimeout: .seconds(Int64(listen.idleTimeoutSeconds)),
            maximumRequestTargetBytes: listen.maximumRequestTargetBytes)
        return HTTPServerBuilder { responder in
            GuardedHTTPChannel(
                inner: HTTP1WebSocketUpgradeChannel(
                    responder: responder, configuration: .init(http1: .init(httpDecoderConfiguration: decoder))
                ) { head, channel, _ in
                    await webSockets.shouldUpgrade(head, remoteAddress: channel.remoteAddress?.ipAddress)
                },
                limits: limits)
        }
    }

    /// The sender `registration.code_sender.kind` names (validation made sure there is one outside development).
    static func codeSender(_ configuration: GatehouseConfiguration, http: HTTPClient, inbox: DevelopmentInbox?, logger: Logger) -> any CodeSender {
        if configuration.registration.codeSender == .http, let endpoint = configuration.registration.codeSenderEndpoint {
            return HTTPCodeSender(http: http, configuration: endpoint)
        }
        return LogCodeSender(inbox: inbox, logger: logger)
    }

    /// The funnel report straight from the store, for `gatehouse funnel`.
    public static func funnelReport(configuration: GatehouseConfiguration, window: DateInterval, logger: Logger) async throws -> FunnelReport {
        try await Stores.open(configuration.storage, logger: logger).whileRunning { stores in
            try await FunnelController(events: stores.events, registrations: stores.registrations, configuration: configuration).report(window)
        }
    }

    static func origin(_ url: URL) -> String? {
        guard let scheme = url.scheme, let host = url.host else { return nil }
        return "\(scheme)://\(host)" + (url.port.map { ":\($0)" } ?? "")
    }
}
