import Foundation
import GatehouseCore
import Hummingbird

extension GatehouseApplication {
    /// The request's way through the gateway, top to bottom: the client's address (behind a trusted load balancer) →
    /// metrics and the access log → security headers → the request's language → error pages → app hosts → stray app paths →
    /// static files → public routes (health, readiness, the development provider, back-channel logout) → the gateway's
    /// pages out of reach of apps' scripts → session →
    /// sign-in routes → signed-in routes (a context that cannot be made without a session) → the proxy.
    static func buildRouter(_ gateway: Gateway) -> Router<GatewayRequestContext> {
        let router = ownRouter(gateway)
        refuseOtherMethods(on: router)
        return router
    }

    /// Every route of the gateway's, without the `405` answers for the methods they do not take.
    static func ownRouter(_ gateway: Gateway) -> Router<GatewayRequestContext> {
        let foundation = gateway.foundation
        let configuration = gateway.configuration
        let stores = foundation.stores
        let renderer = gateway.renderer
        let router = Router(context: GatewayRequestContext.self)
        router.add(middleware: TraceMiddleware(resolver: foundation.clientAddresses, tracer: foundation.tracer))
        if foundation.clientAddresses.trustsAnyProxy { router.add(middleware: ClientAddressMiddleware(resolver: foundation.clientAddresses)) }
        router.add(middleware: AccessLogMiddleware(metrics: foundation.metrics, catalog: gateway.catalog, callbackPath: configuration.oidc.redirectPath))
        router.add(middleware: SecurityHeadersMiddleware(headers: gateway.securityHeaders))
        router.add(middleware: LanguageMiddleware(languages: renderer.languages))
        router.add(middleware: ErrorPageMiddleware(renderer: renderer))
        router.add(middleware: HostMountMiddleware(controller: gateway.hostMounts))
        router.add(middleware: StrayAppPathMiddleware(catalog: gateway.catalog, publicOrigin: configuration.publicOrigin))
        router.add(middleware: GatewayAssetsMiddleware(assets: renderer.assets))

        // Alive; asked for JSON, also which build runs (`BuildInfo`).
        router.get(RouterPath(stringLiteral: Paths.health)) { request, _ in
            guard ErrorAnswer.wantsJSON(accept: request.headers[.accept]) else { return PlainTextResponse.make("ok\n") }
            let build = BuildInfo.current
            return try JSONResponse.make(["status": "ok", "version": build.version, "commit": build.commit, "built": build.built])
        }
        let draining = foundation.draining
        router.get(RouterPath(stringLiteral: Paths.ready)) { _, _ -> Response in
            if draining.hasBegun { return PlainTextResponse.make("shutting down\n", status: .serviceUnavailable) }
            // Ready means able to serve: the store answering (the gateway's files are in memory since the start).
            guard await stores.answers() else {
                return PlainTextResponse.make(
                    "storage unavailable\n", status: .serviceUnavailable,
                    headers: [.retryAfter: ErrorPageMiddleware<GatewayRequestContext>.retryAfterSeconds])
            }
            return PlainTextResponse.make("ready\n")
        }
        let assertionKeys = foundation.assertionKeys
        router.get(RouterPath(stringLiteral: Paths.assertionKeys)) { _, _ in
            // Apps fetch the set again when an assertion names a key they do not know (a rotation announces the
            // next key an hour before it signs), so five minutes of caching never leaves one behind.
            Response(
                status: .ok, headers: [.contentType: "application/jwk-set+json", .cacheControl: "public, max-age=300"],
                body: .init(byteBuffer: ByteBuffer(bytes: assertionKeys.publishedSet)))
        }
        if configuration.metrics?.onMembersListener == true {
            let metrics = foundation.metrics
            router.get("metrics") { _, _ in MetricsServer.response(metrics) }
        }
        foundation.developmentProvider?.addRoutes(to: router)
        BackChannelLogoutController(
            providers: foundation.providers, sessions: stores.sessions, logoutTokens: stores.logoutTokens, events: foundation.events
        ).addRoutes(to: router)
        let push = gateway.push.map { PushController(push: $0, languages: renderer.languages) }
        push?.addGatewayRoute(to: router)

        // The gateway's own routes only (an unknown path stays a 404, which the stray-path middleware may send on).
        let withSession = router.group().add(middleware: GatewayPageIsolationMiddleware()).add(
            middleware: SessionMiddleware(
                resolver: gateway.resolver, cookieName: configuration.cookie.name, languages: renderer.languages, tracer: foundation.tracer,
                audit: foundation.audit)
        ).add(middleware: KeptFormMiddleware(forms: gateway.keptForms, origins: gateway.access.origins))
        AuthController(
            configuration: configuration, providers: foundation.providers, attempts: stores.attempts, sessions: stores.sessions,
            registrations: ExistingRegistrations(
                registrations: stores.registrations, chat: gateway.chatBackend, registeredClaim: configuration.registration.registeredClaim),
            events: foundation.events, renderer: renderer, limiter: gateway.rateLimiter,
            catalog: gateway.catalog, hostMounts: stores.hostMounts, members: stores.members, chats: foundation.chats,
            chainSignature: gateway.hostMounts.signature
        ).addRoutes(to: withSession)
        LeavingController(renderer: renderer, leaving: configuration.proxy.leaving, publicOrigin: configuration.publicOrigin).addRoutes(
            to: withSession)
        ForwardAuthController(
            catalog: gateway.catalog, access: gateway.access, clientAddresses: foundation.clientAddresses, publicOrigin: configuration.publicOrigin
        ).addRoutes(to: withSession)

        let signedIn = withSession.group(context: SignedInRequestContext.self)
        let portal = PortalController(
            catalog: gateway.catalog, renderer: renderer, features: configuration.features, registration: configuration.registration,
            registrations: stores.registrations, members: stores.members, servesChat: foundation.chats != nil, isOperator: configuration.isOperator)
        portal.addRoutes(to: signedIn)
        if let chats = foundation.chats, let live = gateway.live {
            let chat = ChatFeature(
                chats: chats, portal: portal, registrations: stores.registrations, renderer: renderer, publicOrigin: configuration.publicOrigin,
                draining: foundation.draining, features: configuration.features, links: { [catalog = gateway.catalog] in catalog.messageLink($0) })
            ChatController(chat: chat, live: live, push: gateway.push).addRoutes(to: signedIn)
            push?.addRoutes(to: chat.routes(.chats, on: signedIn).actions)
            ChatSearchController(chat: chat).addRoutes(to: signedIn)
            let settings = configuration.registration.chat
            CallController(chat: chat, live: live, signalling: CallSignalling(networks: settings.callNetworks), relayOnly: settings.callsRelayOnly)
                .addRoutes(to: signedIn)
            StoryController(chat: chat, lifetime: settings.storyLifetime, now: { Date() }).addRoutes(to: signedIn)
        }
        let registration = RegistrationController(
            flows: stores.flows, registrations: stores.registrations, sender: gateway.codeSender, chat: gateway.chatBackend,
            chats: foundation.chats, hasher: PINHasher(cost: UInt8(configuration.registration.pinBcryptCost)), events: foundation.events, renderer: renderer,
            configuration: configuration, inbox: foundation.inbox, metrics: foundation.metrics, limiter: gateway.rateLimiter)
        registration.addRoutes(to: signedIn)
        AccountController(upgrade: registration).addRoutes(to: signedIn)
        PINCheckController(
            pins: registration.pins, sessions: stores.sessions, events: foundation.events, renderer: renderer, configuration: configuration,
            returns: SignInReturns(externalOrigins: gateway.catalog.externalOrigins)
        ).addRoutes(to: signedIn)
        let funnel = FunnelController(
            events: stores.events, queue: foundation.eventQueue, registrations: stores.registrations, configuration: configuration,
            languages: renderer.languages)
        funnel.addRoutes(to: signedIn)
        // The console: operators only, before any of its pages runs.
        let console = signedIn.group().add(middleware: OperatorOnlyMiddleware(configuration: configuration))
        let audit = OperatorAuditController(
            audit: stores.audit, members: stores.members, queue: foundation.audit.queue, renderer: renderer, configuration: configuration)
        audit.addRoutes(to: console)
        OperatorController(
            funnel: funnel, events: stores.events, sessions: stores.sessions, metrics: foundation.metrics, audit: audit, renderer: renderer,
            configuration: configuration
        ).addRoutes(to: console)
        OperatorMembersController(
            registrations: stores.registrations, chat: gateway.chatBackend, events: foundation.events, renderer: renderer, configuration: configuration
        ).addRoutes(to: console)
        OperatorCatalogController(
            catalog: foundation.storedCatalog, audit: foundation.audit, trail: audit,
            probe: UpstreamProbe(policy: gateway.access.policy, clients: foundation.upstreamClients), renderer: renderer, configuration: configuration
        ).addRoutes(to: console)
        gateway.frame.addRoutes(to: signedIn)
        KeptFormController(forms: gateway.keptForms, renderer: renderer, configuration: configuration).addRoutes(to: signedIn)
        SessionsController(sessions: stores.sessions, events: foundation.events, renderer: renderer, configuration: configuration).addRoutes(
            to: signedIn)
        LanguageController(sessions: stores.sessions, languages: renderer.languages, publicOrigin: configuration.publicOrigin).addRoutes(
            to: signedIn)
        gateway.proxy.addRoutes(to: signedIn)
        gateway.hostMounts.addRoutes(to: signedIn)
        return router
    }
}
