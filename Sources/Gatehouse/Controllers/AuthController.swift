import Crypto
import Foundation
import GatehouseCore
import GatehouseStorage
import HTTPTypes
import Hummingbird
import Logging

/// Sign-in page, the start of the authorization-code flow, the callback and sign-out.
public struct AuthController: Sendable {
    let configuration: GatehouseConfiguration
    let providers: IdentityProviders
    let attempts: any LoginAttemptStore
    let sessions: any SessionStore
    let registrations: ExistingRegistrations
    let events: EventRecorder
    let renderer: PageRenderer
    let cookie: SessionCookie
    let limiter: RateLimiter
    let returns: SignInReturns
    let catalog: AppCatalog
    let hostMounts: any HostMountStore
    /// Who signed in, remembered beyond the session (the console names members by it).
    let members: any MemberStore
    /// The members' Matrix sessions, when the gateway serves its own chat: made at sign-in, ended at sign-out.
    let chats: ChatSessions?
    let chainSignature: @Sendable (String) -> String

    public init(
        configuration: GatehouseConfiguration, providers: IdentityProviders, attempts: any LoginAttemptStore, sessions: any SessionStore,
        registrations: ExistingRegistrations, events: EventRecorder, renderer: PageRenderer, limiter: RateLimiter, catalog: AppCatalog,
        hostMounts: any HostMountStore, members: any MemberStore, chats: ChatSessions? = nil,
        chainSignature: @escaping @Sendable (String) -> String
    ) {
        self.members = members
        self.chats = chats
        self.chainSignature = chainSignature
        self.hostMounts = hostMounts
        self.catalog = catalog
        self.configuration = configuration
        self.providers = providers
        self.attempts = attempts
        self.sessions = sessions
        self.registrations = registrations
        self.events = events
        self.renderer = renderer
        self.limiter = limiter
        self.cookie = SessionCookie(name: configuration.cookie.name, isSecure: configuration.cookieIsSecure, domain: configuration.cookie.domain)
        returns = SignInReturns(externalOrigins: catalog.externalOrigins)
    }

    public func addRoutes(to router: RouterGroup<GatewayRequestContext>) {
        router.get(RouterPath(stringLiteral: Paths.signIn), use: signInPage)
        router.get(RouterPath(stringLiteral: Paths.signedOutPage), use: signedOutPage)
        router.get(RouterPath(stringLiteral: Paths.signInStart), use: start)
        router.get(RouterPath(stringLiteral: configuration.oidc.redirectPath), use: callback)
        router.get(RouterPath(stringLiteral: Paths.signOut), use: signOutPage)
        router.post(RouterPath(stringLiteral: Paths.signOut), use: signOut)
    }

    /// `GET /signout`: where the bar inside an app sends a member who wants to sign out (the bar is the same markup for
    /// every member, so it carries no form token): who is signed in, and the form that signs out; “Stay signed in”
    /// goes back to `return_to` (a path of the gateway's) or the web apps.
    @Sendable func signOutPage(_ request: Request, context: GatewayRequestContext) async throws -> Response {
        guard let session = context.session else { return redirect(to: Paths.signIn) }
        let back = request.uri.queryParameters.get("return_to").flatMap(ReturnTarget.init)?.path ?? Paths.portal
        var values: [String: Any] = ["memberName": session.identity.displayName, "csrf": session.csrfToken, "back": back]
        if let email = session.identity.emailBesideName { values["email"] = email }
        var response = try renderer.page("signout", title: renderer.strings["signout_title"], values)
        response.headers[.cacheControl] = "no-store"
        return response
    }

    @Sendable func signInPage(_ request: Request, context: GatewayRequestContext) async throws -> Response {
        let returnTo = returns.accept(request.uri.queryParameters.get("return_to"))
        if context.session != nil {
            return redirect(to: returnTo ?? Paths.portal)
        }
        var values: [String: Any] = [:]
        if let returnTo { values["returnTo"] = returnTo }
        // Several providers: a button each, named as the organization names them.
        if providers.all.count > 1 {
            values["providers"] = providers.all.map { client in
                ["id": client.configuration.id, "label": renderer.strings.text("signin_with", ["provider": client.configuration.name ?? client.configuration.id])]
            }
        }
        if request.uri.queryParameters.get("expired") == "1" {
            values["notice"] = renderer.strings["session_expired"]
        }
        // A form waits for this sign-in (`KeptForms`): the member is told it is not lost.
        if returnTo?.hasPrefix(Paths.keptForm + "?") == true { values["notice"] = renderer.strings["kept_form_signin_notice"] }
        if let reason = request.uri.queryParameters.get("error") {
            let key = "signin_error_\(reason)"
            values["error"] = renderer.strings.values[key] ?? renderer.strings["signin_error_internal"]
        }
        return try renderer.page("signin", title: renderer.strings["signin_title"], values)
    }

    @Sendable func signedOutPage(_ request: Request, context: GatewayRequestContext) async throws -> Response {
        let providerDown = request.uri.queryParameters.get("provider") == "down"
        // Other tabs of this browser are told (their pages would only find out at their next request).
        var response = try renderer.page(
            "signin", title: renderer.strings["signin_title"],
            ["notice": renderer.strings[providerDown ? "signed_out_provider_down" : "signed_out"], "broadcast": "signed-out"])
        // Where the provider sends the browser back after its own sign-out: the browser forgets what the apps kept (a
        // browser with a live session keeps it: this page is no way to sign somebody out).
        if context.session == nil { response.headers.append(SecurityHeaders.signedOut) }
        return response
    }

    /// Creates the login attempt, binds it to this browser and sends the browser to the provider.
    @Sendable func start(_ request: Request, context: GatewayRequestContext) async throws -> Response {
        try await limiter.admit(.signInStart, client: context.clientAddress)
        let query = request.uri.queryParameters
        let returnTo = returns.accept(query.get("return_to")) ?? Paths.portal
        // A sign-in again that a rule or an app asked for (`AccessError.signInAgain`); a link that asks for nothing
        // readable is a plain sign-in.
        let stepUp = StepUpRequest(parsing: query.get("max_age").map { String($0) }, acr: query.get("acr").map { String($0) })
        // The provider the member chose; a step-up goes to the one they signed in at.
        let named = query.get("provider").map { String($0) }
        guard let oidc = named.map({ providers.client($0) }) ?? context.session.map(providers.client(for:)) ?? providers.primary else {
            throw RequestError.badRequest("provider: no identity provider of the gateway's is named \(named ?? "")")
        }
        let binding = RandomToken.make()
        var attempt = LoginAttempt(
            state: RandomToken.make(), browserBindingHash: TokenHash.hex(binding), nonce: RandomToken.make(),
            codeVerifier: PKCE.generate().verifier, returnTo: returnTo, createdAt: Date(), stepUp: stepUp
        )
        attempt.provider = providers.recorded(oidc)
        events.record(.ssoLoginAttempt)
        let location: String
        do {
            location = try await oidc.authorizationURL(
                state: attempt.state, nonce: attempt.nonce, pkce: PKCE(verifier: attempt.codeVerifier), redirectURI: configuration.redirectURI,
                stepUp: stepUp)
            try await attempts.insert(attempt)
        } catch let error as OIDCError {
            return await failure(error, returnTo: returnTo, request: request, context: context)
        }
        var response = redirect(to: location)
        response.headers.append(HTTPField(name: .setCookie, value: cookie.loginCookie.setting(binding, maxAge: Int(LoginAttempt.lifetime))))
        return response
    }

    /// The provider's answer: check state and browser, exchange the code, verify, read userinfo, start the session.
    @Sendable func callback(_ request: Request, context: GatewayRequestContext) async throws -> Response {
        // Before the attempt is taken: a member refused here can come back to the same callback once the wait is over.
        try await limiter.admit(.callback, client: context.clientAddress)
        let query = request.uri.queryParameters
        var attempt: LoginAttempt?
        if let state = query.get("state"), !state.isEmpty, state.utf8.count <= 256 {
            attempt = try await attempts.take(state: state)
        }
        let returnTo = attempt?.returnTo ?? Paths.portal
        // The provider the attempt went to answers; without an attempt, nothing is exchanged anyway.
        let oidc = providers.client(attempt?.provider) ?? providers.primary
        do {
            // One value per parameter: a second `code` or `state` is somebody splicing responses together.
            for name in ["code", "state", "error", "iss"] where query.getAll(name).count > 1 {
                throw OIDCError.invalidProviderResponse("the callback repeats \(name)")
            }
            try await checkResponseIssuer(query.get("iss"), of: oidc)
            if let code = query.get("error") {
                throw OIDCError.providerError(
                    code: String(code.prefix(64)), description: query.get("error_description").map { String($0.prefix(200)) })
            }
            guard let attempt, let binding = request.cookies[cookie.loginCookie.name]?.value,
                TokenHash.hex(binding) == attempt.browserBindingHash,
                Date().timeIntervalSince(attempt.createdAt) < LoginAttempt.lifetime
            else { throw OIDCError.invalidState }
            guard let code = query.get("code"), !code.isEmpty else { throw OIDCError.invalidProviderResponse("no code in callback") }

            let tokens = try await oidc.exchange(code: code, codeVerifier: attempt.codeVerifier, redirectURI: configuration.redirectURI)
            guard let idToken = tokens.idToken else { throw OIDCError.invalidIDToken("token response has no id_token") }
            let claims = try await oidc.verifier.verify(idToken, expectedNonce: attempt.nonce)
            let identity = try await oidc.memberIdentity(accessToken: tokens.accessToken, idToken: idToken)
            guard identity.sub == (try oidc.account(claims.subject)) else { throw OIDCError.invalidUserinfo("userinfo sub differs from the ID token's") }
            // The same member proving themselves again keeps their session (and the apps' cookies in its jar);
            // anybody else signing in on this browser starts a new one.
            let current = context.session.flatMap { $0.identity.sub == identity.sub ? $0 : nil }
            let assurance = try SignInProof.assurance(
                of: claims, for: attempt, previous: current?.assurance, clockSkew: oidc.verifier.clockSkew)
            if let current, attempt.stepUp != nil {
                return try await signedInAgain(current, identity: identity, tokens: tokens, idToken: idToken, assurance: assurance, returnTo: returnTo)
            }
            return try await startSession(
                identity: identity, provider: providers.recorded(oidc), tokens: tokens, idToken: idToken,
                providerSessionID: claims.sessionID.map { oidc.accountPrefix + $0 }, assurance: assurance, returnTo: returnTo,
                replacing: context.session, device: SessionDevice(userAgent: request.headers[.userAgent], address: context.clientAddress),
                logger: context.logger)
        } catch let error as OIDCError {
            if case .notReauthenticated = error { events.record(.stepUp, sub: context.session?.identity.sub, detail: error.reason) }
            return await failure(error, returnTo: returnTo, request: request, context: context)
        }
    }

    /// RFC 9207 (mix-up defence): a provider that says it names itself in authorization responses must do so,
    /// exactly; an `iss` that is present must match whatever the provider says.
    func checkResponseIssuer(_ iss: String?, of oidc: OIDCClient) async throws(OIDCError) {
        let expected = oidc.configuration.issuer
        if let iss {
            guard iss == expected else { throw .invalidProviderResponse("the response's iss \(iss) is not \(expected)") }
        } else if try await oidc.metadata().authorizationResponseIssParameterSupported == true {
            throw .invalidProviderResponse("the response carries no iss although the provider promises one")
        }
    }

    /// A step-up answered: the member's session takes the new tokens and what they proved, and they go on to where
    /// they were going.
    func signedInAgain(
        _ session: Session, identity: MemberIdentity, tokens: TokenResponse, idToken: String, assurance: Assurance, returnTo: String
    ) async throws -> Response {
        var session = session
        let now = Date()
        session.identity = identity
        session.tokens = TokenSet(
            idToken: idToken, accessToken: tokens.accessToken, refreshToken: tokens.refreshToken ?? session.tokens.refreshToken,
            accessTokenExpiresAt: tokens.expiresIn.map { now.addingTimeInterval(TimeInterval($0)) }, obtainedAt: now)
        session.lastSeenAt = now
        // A sign-in restarts the absolute limit: it is what the limit asks for.
        session.expiresAt = max(session.expiresAt, now.addingTimeInterval(TimeInterval(configuration.session.absoluteTimeoutSeconds)))
        try await sessions.update(session)
        try await sessions.setAssurance(assurance, sessionID: session.id)
        events.record(.stepUp, sub: identity.sub, detail: "sign_in")
        var response = redirect(to: returnTo)
        response.headers.append(HTTPField(name: .setCookie, value: cookie.loginCookie.clearing()))
        return response
    }

    func startSession(
        identity: MemberIdentity, provider: String?, tokens: TokenResponse, idToken: String, providerSessionID: String?, assurance: Assurance? = nil,
        returnTo: String, replacing previous: Session?, device: SessionDevice, logger: Logger
    ) async throws -> Response {
        let standing = try await registrations.standing(identity, claims: MemberClaims.unverifiedClaims(of: idToken), logger: logger)
        guard let level = events.transition(.signIn, from: .none, sub: identity.sub, isRegistered: standing.isRegistered) else {
            throw RequestError.badRequest("sign-in transition refused")
        }
        // A new id at every sign-in: a cookie planted before sign-in never becomes a signed-in session.
        if let previous { try await sessions.delete(id: previous.id) }
        let now = Date()
        let value = RandomToken.make()
        var session = Session(
            id: SessionResolver.sessionID(forCookie: value), identity: identity,
            tokens: TokenSet(
                idToken: idToken, accessToken: tokens.accessToken, refreshToken: tokens.refreshToken,
                accessTokenExpiresAt: tokens.expiresIn.map { now.addingTimeInterval(TimeInterval($0)) }, obtainedAt: now
            ),
            level: level, csrfToken: RandomToken.make(), createdAt: now, lastSeenAt: now,
            expiresAt: now.addingTimeInterval(TimeInterval(configuration.session.absoluteTimeoutSeconds)),
            providerSessionID: providerSessionID
        )
        session.device = device
        session.network = device.address.flatMap(IPAddress.init).map(IPNetwork.of)
        session.chatUserID = standing.chatUserID
        session.assurance = assurance
        session.provider = provider
        try await sessions.insert(session)
        try await members.signedIn(account: identity.sub, name: identity.name ?? identity.preferredUsername ?? identity.email, at: now)
        chats?.prepare(session)
        events.record(.ssoLoginSuccess, sub: identity.sub, detail: level.rawValue)
        // Nowhere in particular to go: a registered member starts in their chats (or where the organization says).
        let landing = level == .registered && returnTo == Paths.portal ? configuration.registration.registeredLandingPath : returnTo
        var response = redirect(to: landing)
        response.headers.append(HTTPField(name: .setCookie, value: cookie.setting(value)))
        response.headers.append(HTTPField(name: .setCookie, value: cookie.loginCookie.clearing()))
        return response
    }

    /// Back to the sign-in page with the reason; nothing of the attempt remains.
    func failure(_ error: OIDCError, returnTo: String, request: Request, context: GatewayRequestContext) async -> Response {
        context.logger.notice("sign-in failed", metadata: ["reason": .string(error.reason), "error": .string(error.description)])
        events.record(.ssoLoginFailure, detail: error.reason)
        if ErrorAnswer.wantsJSON(accept: request.headers[.accept]) {
            let status: HTTPResponse.Status = error.isProviderDown ? .badGateway : .badRequest
            var response =
                (try? JSONResponse.make(
                    ["error": error.reason, "message": renderer.strings["signin_error_\(error.reason)"], "request_id": context.id], status: status))
                ?? Response(status: status)
            response.headers.append(HTTPField(name: .setCookie, value: cookie.loginCookie.clearing()))
            return response
        }
        var pairs = [("error", error.reason)]
        if returnTo != Paths.portal { pairs.append(("return_to", returnTo)) }
        var response = redirect(to: FormEncoding.url(Paths.signIn, adding: pairs))
        response.headers.append(HTTPField(name: .setCookie, value: cookie.loginCookie.clearing()))
        return response
    }

    /// Ends the gateway session, then the provider's. A POST with the session's CSRF token from our own origin.
    @Sendable func signOut(_ request: Request, context: GatewayRequestContext) async throws -> Response {
        guard let session = context.session else { return redirect(to: Paths.signIn) }
        _ = try await FormPost.read(request, session: session, publicOrigin: configuration.publicOrigin)
        _ = events.transition(.signOut, from: session.level, sub: session.identity.sub)
        // The app hosts the member used, each to be passed through on the way out (their grants go with the session).
        let appHosts = (try? await hostMounts.grantedSlugs(sessionID: session.id)) ?? []
        try await sessions.delete(id: session.id)
        events.record(.ssoLogout, sub: session.identity.sub, detail: "signed_out")
        // The session's Matrix device goes with it, now (the reaper would, within seconds).
        await chats?.end(sessionID: session.id)
        // A provider that stopped answering would leave the browser on a page that never loads: the gateway's own
        // signed-out page says what happened instead.
        // (Absolute when the way out passes through app hosts, which then send the browser back.)
        let signedOut = (appHosts.isEmpty ? "" : configuration.publicOrigin) + Paths.signedOutPage
        let oidc = providers.client(for: session)
        let end =
            oidc.breaker.isOpen
            ? signedOut + "?provider=down"
            : await oidc.endSessionURL(idTokenHint: session.tokens.idToken, postLogoutRedirectURI: configuration.postLogoutRedirectURI) ?? signedOut
        var response = redirect(
            to: HostMountController.signOutChain(slugs: appHosts, then: end, appsDomain: catalog.appsDomain, signature: chainSignature))
        response.headers.append(HTTPField(name: .setCookie, value: cookie.clearing()))
        response.headers.append(SecurityHeaders.signedOut)
        return response
    }

    func redirect(to location: String) -> Response {
        Response(status: .seeOther, headers: [.location: location, .cacheControl: "no-store"])
    }
}
