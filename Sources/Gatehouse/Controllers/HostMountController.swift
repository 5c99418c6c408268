import Foundation
import GatehouseCore
import GatehouseStorage
import HTTPTypes
import Hummingbird

/// Host-mounted apps (`<slug>.<apps domain>`, for apps that build absolute URLs in JavaScript).
///
/// The gateway's session cookie stays on the gateway's host. An app host gets its own host-only cookie holding a
/// grant for that app alone, tied to the session (it ends with it), obtained through a one-time code:
///
/// 1. the app host, seeing no grant, sets a random state cookie and sends the browser to the gateway's
///    `/apps-open/<slug>?state=…`;
/// 2. the gateway (signed in, allowed to open the app) stores a one-time code bound to that state and sends the
///    browser back to `<app host>/__gatehouse/handoff?code=…`;
/// 3. the app host redeems the code once, within a minute, only in the browser holding the matching state cookie,
///    and sets the grant cookie.
///
/// A code planted in someone else's browser fails at step 3, and no other host ever sees a usable cookie.
public struct HostMountController: Sendable {
    let catalog: AppCatalog
    let proxy: ProxyController
    let store: any HostMountStore
    let resolver: SessionResolver
    let frame: FrameController
    let keptForms: KeptForms
    let configuration: GatehouseConfiguration
    /// Signs the sign-out chain (`signOutChain`).
    let signature: @Sendable (String) -> String
    /// The gateway's own chat, whose unread count the bar asks for on an app host.
    let chats: ChatSessions?
    /// The calls ringing for the member, which the bar hears on an app host too.
    let live: LiveFeed?

    init(
        catalog: AppCatalog, proxy: ProxyController, store: any HostMountStore, resolver: SessionResolver, frame: FrameController,
        keptForms: KeptForms, configuration: GatehouseConfiguration, chats: ChatSessions?, live: LiveFeed?, signature: @escaping @Sendable (String) -> String
    ) {
        self.chats = chats
        self.live = live
        self.keptForms = keptForms
        self.signature = signature
        self.catalog = catalog
        self.proxy = proxy
        self.store = store
        self.resolver = resolver
        self.frame = frame
        self.configuration = configuration
    }

    var isSecure: Bool { configuration.isHTTPS }

    /// `/apps-open/<slug>` on the gateway's host: step 2.
    public func addRoutes(to group: RouterGroup<SignedInRequestContext>) {
        group.get(RouterPath(stringLiteral: Paths.appsOpen + "/:slug")) { request, context -> Response in
            let slug = context.parameters.get("slug") ?? ""
            guard let app = catalog.app(slug), app.mount == .host, let appsDomain = catalog.appsDomain else { throw ProxyError.missing(slug, in: catalog) }
            let session = context.session
            try proxy.access.mayOpen(app, session: session, returnTo: Paths.appsOpen + "/" + slug)
            guard let state = request.uri.queryParameters.get("state"), (16...128).contains(state.count) else {
                // Opened directly (a bookmark, or back from a sign-in again): start at the app host, at the path asked
                // for, which begins with step 1.
                let path = request.uri.queryParameters.get("to").flatMap(ReturnTarget.init)?.path ?? "/"
                return Self.redirect(appsDomain.origin(of: slug) + path)
            }
            let code = RandomToken.make()
            let returnTo = request.uri.queryParameters.get("to").flatMap(ReturnTarget.init)?.path ?? "/"
            try await store.insert(
                AppHandoff(
                    codeHash: TokenHash.hex(code), sessionID: session.id, slug: slug,
                    stateHash: TokenHash.hex(String(state)), returnTo: returnTo,
                    expiresAt: Date().addingTimeInterval(AppHandoff.lifetime)
                ))
            return Self.redirect(FormEncoding.url(appsDomain.origin(of: slug) + HostMountPaths.handoff, adding: [("code", code)]))
        }
    }

    /// Every request on an app host: steps 1 and 3, a pass of sign-out, then the bar's choices (`FrameController`) or
    /// the proxy.
    func handle(_ request: Request, context: GatewayRequestContext, app: AppConfiguration) async throws -> Response {
        if request.uri.path == HostMountPaths.handoff { return try await redeem(request, app: app) }
        if request.uri.path == HostMountPaths.signedOut { return signedOut(request, app: app) }
        let grant = request.cookies[HostMountCookies.grant]?.value
        var resolution: SessionResolver.Resolution?
        if let token = grant, let sessionID = try await store.sessionID(grantTokenHash: TokenHash.hex(token), slug: app.slug) {
            resolution = try await resolver.resolve(
                sessionID: sessionID, client: context.clientAddress.flatMap(IPAddress.init),
                touch: SessionResolver.touches(method: request.method, path: request.uri.path))
        }
        switch resolution {
        case .active(let session, let idle)?:
            if request.uri.path == Paths.frame, request.method == .post { return try await frame.change(request, session: session, logger: context.logger) }
            if request.uri.path == Paths.frame, request.method == .get { return try frame.state(request, session: session) }
            if request.uri.path == Paths.chatUnread, request.method == .get {
                return try ChatController.unreadAnswer(await chats?.unread(for: session))
            }
            if request.uri.path == Paths.live, let live {
                return request.method == .post ? try await live.decline(request, session) : try await live.stream(session, onGateway: false)
            }
            RequestLanguage.settle(session, languages: proxy.mapping.renderer.languages)
            var signedIn = context
            signedIn.session = session
            signedIn.sessionIdle = idle
            do {
                return try await proxy.forward(request, context: try SignedInRequestContext(context: signedIn), app: app, rest: request.uri.description)
            } catch {
                proxy.access.audit?.refusal(error, member: session.identity.sub, app: app.slug, path: request.uri.path)
                throw error
            }
        case .expired(let member?)?:
            // A form posted as the session ran out waits for the member's sign-in, on the gateway.
            if let kept = await keptForms.keep(
                request, sub: member, app: app, rest: request.uri.description, origins: proxy.access.origins, logger: context.logger)
            {
                var response = Self.redirect(
                    configuration.publicOrigin + FormEncoding.url(Paths.signIn, adding: [("return_to", kept), ("expired", "1")]))
                response.headers.append(SecurityHeaders.signedOut)
                return response
            }
        default: break
        }
        // Step 1: no grant (or its session ended), for a page the member opens; a script's request or a resource is
        // told it needs the session instead (the sign-in is another origin's page, which the app's policy refuses).
        if let answer = AnonymousAppRequest.answer(request.headers, message: proxy.mapping.renderer.strings["signin_subtitle"]) {
            return answer
        }
        let state = RandomToken.make()
        var pairs = [("state", state)]
        if request.method == .get, let target = ReturnTarget(request.uri.description) { pairs.append(("to", target.path)) }
        var response = Self.redirect(FormEncoding.url(configuration.publicOrigin + Paths.appsOpen + "/" + app.slug, adding: pairs))
        // A grant whose session ended elsewhere (another browser, the provider, a timeout): this browser forgets what
        // the app kept on its host, as sign-out would have made it.
        if grant != nil { response.headers.append(SecurityHeaders.signedOut) }
        response.headers.append(HTTPField(name: .setCookie, value: cookie(HostMountCookies.state, state, maxAge: 300)))
        return response
    }

    /// Step 3.
    func redeem(_ request: Request, app: AppConfiguration) async throws -> Response {
        guard let code = request.uri.queryParameters.get("code"), code.count <= 128,
            let handoff = try await store.takeHandoff(codeHash: TokenHash.hex(String(code))),
            handoff.slug == app.slug, handoff.expiresAt > Date(),
            let state = request.cookies[HostMountCookies.state]?.value, TokenHash.hex(state) == handoff.stateHash
        else { throw RequestError.forbidden("invalid app handoff") }
        let token = RandomToken.make()
        try await store.insertGrant(tokenHash: TokenHash.hex(token), sessionID: handoff.sessionID, slug: app.slug)
        var response = Self.redirect(handoff.returnTo)
        response.headers.append(HTTPField(name: .setCookie, value: cookie(HostMountCookies.grant, token, maxAge: nil)))
        response.headers.append(HTTPField(name: .setCookie, value: cookie(HostMountCookies.state, "", maxAge: 0)))
        return response
    }

    /// Where sign-out sends the browser first: through each app host in `slugs`, each of which forgets what the app kept
    /// in the browser (`Clear-Site-Data`: its storage, caches and service workers are its origin's, out of the gateway's
    /// reach) and its grant, and then on to `then` (the provider's end of session, or the signed-out page). The chain
    /// is signed (`signature`, a MAC under a key every replica shares) and good for a minute, so that no link made
    /// elsewhere signs a member out of anything.
    static func signOutChain(
        slugs: [String], then: String, appsDomain: AppsDomain?, signature: (String) -> String, now: Date = Date()
    ) -> String {
        guard let appsDomain, let first = slugs.first else { return then }
        let hosts = slugs.dropFirst().joined(separator: ",")
        let until = String(Int(now.timeIntervalSince1970) + 60)
        return FormEncoding.url(
            appsDomain.origin(of: first) + HostMountPaths.signedOut,
            adding: [("hosts", hosts), ("then", then), ("until", until), ("sig", signature(chainText(first, hosts, then, until)))])
    }

    /// What a pass's signature covers: the host it is for, the hosts after it, the end and the deadline.
    static func chainText(_ slug: String, _ hosts: String, _ then: String, _ until: String) -> String {
        ["gatehouse sign-out chain", slug, hosts, then, until].joined(separator: "\n")
    }

    /// One pass of the sign-out chain on `app`'s host: a chain the gateway signed for this host, in time, clears what
    /// the app kept and its grant, and goes on (to the next host, then to the gateway or the provider); anything else
    /// goes to Web Apps and changes nothing.
    func signedOut(_ request: Request, app: AppConfiguration) -> Response {
        let query = request.uri.queryParameters
        let hosts = query.get("hosts").map { String($0) } ?? ""
        let then = query.get("then").map { String($0) } ?? ""
        let until = query.get("until").map { String($0) } ?? ""
        guard let deadline = Double(until), deadline >= Date().timeIntervalSince1970,
            let sig = query.get("sig").map({ String($0) }), constantTimeEquals(sig, signature(Self.chainText(app.slug, hosts, then, until)))
        else { return Self.redirect(configuration.publicOrigin + Paths.portal) }
        let rest = hosts.split(separator: ",").map(String.init).filter { catalog.app($0)?.mount == .host }
        var response = Self.redirect(Self.signOutChain(slugs: rest, then: then, appsDomain: catalog.appsDomain, signature: signature))
        response.headers.append(HTTPField(name: .setCookie, value: cookie(HostMountCookies.grant, "", maxAge: 0)))
        response.headers.append(SecurityHeaders.signedOut)
        return response
    }

    /// Host-only (no `Domain`): a cookie of one app host is never sent to another.
    func cookie(_ name: String, _ value: String, maxAge: Int?) -> String {
        SessionCookie(name: name, isSecure: isSecure).setting(value, maxAge: maxAge)
    }

    static func redirect(_ location: String) -> Response {
        Response(status: .seeOther, headers: [.location: location, .cacheControl: "no-store"])
    }
}
