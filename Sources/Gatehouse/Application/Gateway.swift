import Foundation
import GatehouseCore
import GatehouseStorage
import Logging

/// Every part of the gateway that follows its configuration, each made once per configuration over the foundation the
/// gateway keeps from start to end. A reload (`ReloadedConfiguration`) makes a new one and new requests go to it; the
/// requests already under way finish with the one they began with. `GatehouseApplication` turns it into a router
/// (`buildRouter`); the foundation's parts are named as its (`gateway.foundation.stores`).
///
/// A class: the running gateway is looked up for every request and every exchange of the data plane, and a struct
/// of this size (the configuration twice, every controller) would be copied there, a retain and a release for each
/// of its hundreds of references.
final class Gateway: Sendable {
    /// What applies now: the foundation's configuration with what changed of the reloadable parts.
    let configuration: GatehouseConfiguration
    let foundation: GatewayFoundation
    let renderer: PageRenderer
    let rateLimiter: RateLimiter
    let resolver: SessionResolver
    let catalog: AppCatalog
    /// The one gate every way into an app asks: paths, app hosts (through the proxy) and WebSocket upgrades.
    let access: AppAccess
    /// The domains the jars accept cookies for, from the allowlist (given to the jars when this gateway takes over).
    let cookieDomains: CookieDomainPolicy
    let proxy: ProxyController
    /// Forms kept while their member proves themselves again.
    let keptForms: KeptForms
    /// What the data plane answers on the member listener's event loops.
    let dataPlane: ProxyDataPlane
    let securityHeaders: SecurityHeaders
    let hostMounts: HostMountController
    /// The bar's choices, kept in the session.
    let frame: FrameController
    /// The ring every page of a member's hears, when the gateway serves its own chat.
    let live: LiveFeed?
    /// Web Push to members' browsers with no gateway page open (`chat.push.enabled`), when the gateway serves its chat.
    let push: ChatPush?
    let webSockets: WebSocketProxy
    /// The sender `registration.code_sender.kind` names (validation made sure there is one outside development).
    let codeSender: any CodeSender
    /// The homeserver `chat.backend` names (the loader made sure a synapse backend has what it needs): one for the
    /// gateway, whatever asks for it.
    let chatBackend: any ChatBackend

    /// The gateway as the foundation started it, with its own configuration.
    convenience init(configuration: GatehouseConfiguration, stores: Stores, renderer: PageRenderer, logger: Logger, hostResolver: any HostResolver)
        async throws
    {
        let foundation = try await GatewayFoundation(
            configuration: configuration, stores: stores, renderer: renderer, logger: logger, hostResolver: hostResolver)
        try self.init(configuration: configuration, foundation: foundation, renderer: renderer)
    }

    /// `configuration` over `foundation`: nothing of what the foundation runs is touched until `takeOver()`.
    init(configuration: GatehouseConfiguration, foundation: GatewayFoundation, renderer: PageRenderer) throws {
        self.configuration = configuration
        self.foundation = foundation
        self.renderer = renderer
        let (stores, events, logger, metrics, tracer, cache) =
            (foundation.stores, foundation.events, foundation.logger, foundation.metrics, foundation.tracer, foundation.cache)
        let (jars, clientAddresses) = (foundation.jars, foundation.clientAddresses)
        let proxy = configuration.proxy
        rateLimiter = RateLimiter(store: stores.rateLimits, configuration: configuration.rateLimits, metrics: metrics)
        resolver = SessionResolver(
            store: stores.sessions, refresher: foundation.refresher, events: events, configuration: configuration.session, logger: logger,
            shortestAppIdleSeconds: configuration.apps.compactMap(\.sessionLimits.idleSeconds).min())

        let appsDomain = configuration.appsDomain.map { AppsDomain(domain: $0, publicURL: configuration.publicURL) }
        let allowlist = Allowlist(configuration.allowlist)
        catalog = AppCatalog(
            apps: configuration.apps, publicOrigin: configuration.publicOrigin, appsDomain: appsDomain, allowlist: allowlist,
            turnedOff: configuration.turnedOffApps)
        access = try AppAccess(
            catalog: catalog, policy: UpstreamPolicy(allowlist: allowlist, configuration: proxy, resolver: foundation.hostResolver),
            configuration: configuration,
            assertions: AssertionSigner(ring: foundation.assertionKeys, issuer: configuration.publicOrigin), audit: foundation.audit)

        cookieDomains = CookieDomainPolicy(allowlist: allowlist, boundaries: proxy.cookieBoundaries)
        let bar = GatewayBar(
            renderer: renderer, catalog: catalog, features: configuration.features, registration: configuration.registration, events: events,
            session: configuration.session, servesChat: foundation.chats != nil)
        keptForms = KeptForms(store: stores.keptForms, catalog: catalog, maximumBytes: proxy.maximumRequestBodyBytes)
        self.proxy = ProxyController(
            catalog: catalog, forwarder: Forwarder(clients: foundation.upstreamClients, configuration: proxy), access: access, jars: jars, bar: bar,
            configuration: configuration, metrics: metrics, renderer: renderer, keptForms: keptForms, tracer: tracer)
        let securityHeaders = SecurityHeaders(
            identityProviderOrigins: configuration.providers.compactMap { URL(string: $0.issuer).flatMap(Self.origin) }, isHTTPS: configuration.isHTTPS,
            appHosts: catalog.apps.contains { $0.mount == .host } ? catalog.appsDomain?.origin(of: "*") : nil)
        self.securityHeaders = securityHeaders
        frame = FrameController(
            sessions: stores.sessions, events: events, configuration: configuration.session, refresher: foundation.refresher,
            publicOrigin: configuration.publicOrigin, languages: renderer.languages)
        let live = foundation.chats.map {
            LiveFeed(chats: $0, features: configuration.features, renderer: renderer, publicOrigin: configuration.publicOrigin, draining: foundation.draining)
        }
        self.live = live
        push = foundation.chats.flatMap { chats in
            Self.push(chats: chats, configuration: configuration, foundation: foundation, languages: renderer.languages)
        }
        hostMounts = HostMountController(
            catalog: catalog, proxy: self.proxy, store: stores.hostMounts, resolver: resolver, frame: frame,
            keptForms: keptForms,
            configuration: configuration, chats: foundation.chats, live: live,
            signature: { [keyring = stores.keyring] text in keyring.lookupHash(text) })
        dataPlane = ProxyDataPlane(
            catalog: catalog, access: access, cache: cache, resolver: resolver, jars: jars, bar: bar, mapping: self.proxy.mapping, renderer: renderer,
            securityHeaders: securityHeaders, metrics: metrics, clientAddresses: clientAddresses, cookieName: configuration.cookie.name,
            serverName: configuration.brand.gatewayName, publicOrigin: configuration.publicOrigin,
            maximumRequestBodyBytes: configuration.proxy.maximumRequestBodyBytes, replicasShareJars: stores.isShared, logger: logger,
            tracer: tracer)
        webSockets = WebSocketProxy(
            catalog: catalog, access: access, jars: jars, resolver: resolver, sessions: stores.sessions, hostMounts: stores.hostMounts,
            configuration: configuration, clientAddresses: clientAddresses, draining: foundation.draining, logger: logger)
        let registration = configuration.registration
        if registration.codeSender == .http, let endpoint = registration.codeSenderEndpoint {
            codeSender = HTTPCodeSender(http: foundation.serviceClients["registration.code_sender.tls"] ?? foundation.http, configuration: endpoint)
        } else {
            codeSender = LogCodeSender(inbox: foundation.inbox, logger: foundation.logger)
        }
        chatBackend = registration.chat.backend(http: foundation.serviceClients["chat.tls"] ?? foundation.http)
    }

    /// Makes what this gateway decides for the parts of the foundation that follow the configuration: from now on,
    /// the jars accept cookies for its allowlist's domains.
    func takeOver() {
        foundation.jars.use(cookieDomains)
    }

    static func origin(_ url: URL) -> String? {
        guard let scheme = url.scheme, let host = url.host else { return nil }
        return "\(scheme)://\(host)" + (url.port.map { ":\($0)" } ?? "")
    }

    /// The gateway's Web Push: its VAPID key and its push keys' key derived from the storage's sealing key (the same
    /// on every replica; after a key change browsers subscribe again at the member's next visit to Chats).
    static func push(chats: ChatSessions, configuration: GatehouseConfiguration, foundation: GatewayFoundation, languages: Languages) -> ChatPush? {
        let settings = configuration.registration.chat.push
        guard settings.enabled else { return nil }
        let keyring = foundation.stores.keyring
        let vapid = VAPID(keyMaterial: keyring.derivedKey("gatehouse web push vapid"), subject: settings.contact ?? configuration.publicOrigin)
        return ChatPush(
            chats: chats, sessions: foundation.stores.sessions,
            sender: WebPushSender(http: foundation.http, vapid: vapid, services: settings.services, timeout: .seconds(10)), streams: chats.streams,
            languages: languages, publicOrigin: configuration.publicOrigin, gatewayURL: settings.gatewayURL ?? configuration.publicOrigin + Paths.pushGateway,
            keyMaterial: keyring.derivedKey("gatehouse web push keys"), logger: foundation.logger)
    }
}
