import Foundation
import GatehouseCore
import GatehouseStorage
import Testing

@testable import Gatehouse

/// The whole authorization-code flow over real sockets, against the built-in development provider.
@Suite struct SignInFlowTests {
    /// Follows the flow from a signed-out deep link to the callback's answer, as a browser would.
    struct Flow {
        var cookies = BrowserCookies()
        var callbackURL: String?
        var callbackReply: LiveGateway.Reply?
    }

    /// The account picker's form: the authorization request's parameters plus the member's choice.
    static func decision(_ authorizeURL: String, account: String, password: String, action: String = "continue") -> [(String, String)] {
        let query = FormEncoding.decode(String(authorizeURL.split(separator: "?", maxSplits: 1)[1]))
        return query.map { ($0.key, $0.value) } + [("account", account), ("password", password), ("action", action)]
    }

    static func signIn(
        _ gateway: LiveGateway, as username: String = "alice", deepLink: String = "/chats", password: String? = nil,
        action: String = "continue", userAgent: String? = nil, headers: [(String, String)] = []
    ) async throws -> Flow {
        var flow = Flow()
        let first = try await gateway.get(deepLink, cookies: flow.cookies.values, headers: headers)
        #expect(first.status == 303)
        let signInPage = try #require(first.location)
        #expect(signInPage.hasPrefix("/signin"))
        let start = try await gateway.get(
            signInPage.replacingOccurrences(of: "/signin", with: "/signin/start"), cookies: flow.cookies.values, headers: headers)
        flow.cookies.absorb(start)
        let authorize = try #require(start.location)
        #expect(authorize.hasPrefix(gateway.origin + "/dev-idp/authorize?"))
        let page = try await gateway.get(authorize, cookies: [:])
        #expect(page.status == 200)
        #expect(page.body.contains("Development identity provider"))
        let form = Self.decision(authorize, account: username, password: password ?? gateway.built.developmentPassword!, action: action)
        let decision = try await gateway.post("/dev-idp/authorize", form: form, cookies: [:])
        guard decision.status == 302, let callback = decision.location else { return flow }
        flow.callbackURL = callback
        let reply = try await gateway.get(callback, cookies: flow.cookies.values, headers: (userAgent.map { [("User-Agent", $0)] } ?? []) + headers)
        flow.cookies.absorb(reply)
        flow.callbackReply = reply
        return flow
    }

    @Test func deepLinkSurvivesSignInAndPortalShowsTheMember() async throws {
        try await LiveGateway.run { gateway in
            let flow = try await Self.signIn(gateway, deepLink: "/chats")
            let reply = try #require(flow.callbackReply)
            #expect(reply.status == 303)
            #expect(reply.location == "/chats")
            let sessionCookie = try #require(reply.setCookies.first { $0.hasPrefix("gatehouse_session=") })
            #expect(sessionCookie.contains("HttpOnly") && sessionCookie.contains("SameSite=Lax") && sessionCookie.contains("Path=/"))
            #expect(flow.cookies.values["gatehouse_session_login"] == nil)

            let chats = try await gateway.get("/chats", cookies: flow.cookies.values)
            #expect(chats.status == 200)
            #expect(chats.body.contains("Alice Archer"))
            let portal = try await gateway.get("/", cookies: flow.cookies.values)
            // The member's roles, without the provider's own (`offline_access`), and the email.
            #expect(portal.body.contains("Web Apps") && portal.body.contains("<span class=\"role\">user</span>"))
            #expect(!portal.body.contains("offline_access") && portal.body.contains("alice@example.org"))
            #expect(portal.headers.first(name: "Content-Security-Policy")?.contains("frame-ancestors 'none'") == true)
        }
    }

    @Test func aCallbackWorksOnceAndOnlyInTheBrowserThatStartedIt() async throws {
        try await LiveGateway.run { gateway in
            let flow = try await Self.signIn(gateway)
            let callback = try #require(flow.callbackURL)
            // Replayed by the same browser: the state is spent.
            let replay = try await gateway.get(callback, cookies: ["gatehouse_session_login": "anything"])
            #expect(replay.location?.hasPrefix("/signin?error=invalid_state") == true)

            // A fresh code and state, delivered to a browser without the login cookie (login CSRF).
            let start = try await gateway.get("/signin/start", cookies: [:])
            let authorize = try #require(start.location)
            let form = Self.decision(authorize, account: "bob", password: gateway.built.developmentPassword!)
            let decision = try await gateway.post("/dev-idp/authorize", form: form, cookies: [:])
            let foreign = try await gateway.get(try #require(decision.location), cookies: ["gatehouse_session_login": "forged"])
            #expect(foreign.location?.hasPrefix("/signin?error=invalid_state") == true)
            #expect(!foreign.setCookies.contains { $0.hasPrefix("gatehouse_session=") && !$0.contains("Max-Age=0") })
        }
    }

    /// A callback URL the provider issued, and the login cookie of the browser that started it.
    static func freshCallback(_ gateway: LiveGateway) async throws -> (url: String, cookies: [String: String]) {
        let start = try await gateway.get("/signin/start", cookies: [:])
        var cookies = BrowserCookies()
        cookies.absorb(start)
        let authorize = try #require(start.location)
        let form = Self.decision(authorize, account: "alice", password: gateway.built.developmentPassword!)
        let decision = try await gateway.post("/dev-idp/authorize", form: form, cookies: [:])
        return (try #require(decision.location), cookies.values)
    }

    @Test func splicedCallbacksAreRefused() async throws {
        try await LiveGateway.run { gateway in
            for (extra, reason) in [
                ("&code=other", "invalid_provider_response"), ("&state=other", "invalid_provider_response"),
                ("&iss=https%3A%2F%2Fevil.example", "invalid_provider_response"),
                ("&iss=" + FormEncoding.escape(gateway.configuration.oidc.issuer + "/"), "invalid_provider_response"),
            ] {
                let (url, cookies) = try await Self.freshCallback(gateway)
                let reply = try await gateway.get(url + extra, cookies: cookies)
                #expect(reply.location?.hasPrefix("/signin?error=\(reason)") == true, "\(extra)")
                #expect(!reply.setCookies.contains { $0.hasPrefix("gatehouse_session=") && !$0.contains("Max-Age=0") }, "\(extra)")
            }
            // The provider's own, exact `iss` is fine.
            let (url, cookies) = try await Self.freshCallback(gateway)
            let fine = try await gateway.get(url + "&iss=" + FormEncoding.escape(gateway.configuration.oidc.issuer), cookies: cookies)
            #expect(fine.setCookies.contains { $0.hasPrefix("gatehouse_session=") })
        }
    }

    @Test func aFailedCallbackAnswersAnAPICallerInJSON() async throws {
        try await LiveGateway.run { gateway in
            let (url, _) = try await Self.freshCallback(gateway)
            let reply = try await gateway.get(url, cookies: [:], headers: [("Accept", "application/json")])
            #expect(reply.status == 400)
            #expect(reply.headers.first(name: "Content-Type") == "application/json")
            #expect(reply.body.contains("\"error\":\"invalid_state\"") && reply.body.contains("request_id"))
        }
    }

    @Test func cancellingAtTheProviderShowsASpecificMessageAndNoSession() async throws {
        try await LiveGateway.run { gateway in
            let flow = try await Self.signIn(gateway, deepLink: "/calls", action: "cancel")
            let reply = try #require(flow.callbackReply)
            #expect(reply.location == "/signin?error=access_denied&return_to=%2Fcalls")
            #expect(flow.cookies.values["gatehouse_session"] == nil)
            let page = try await gateway.get(reply.location!, cookies: flow.cookies.values)
            #expect(page.body.contains("Sign-in was cancelled"))
            #expect(page.body.contains(#"name="return_to" value="/calls""#))
        }
    }

    @Test func wrongPasswordStaysAtTheProvider() async throws {
        try await LiveGateway.run { gateway in
            let flow = try await Self.signIn(gateway, password: "wrong")
            #expect(flow.callbackURL == nil)
        }
    }

    @Test(arguments: ["//evil.example/x", "https://evil.example", "/\\evil.example", "/%2f%2fevil.example"])
    func hostileReturnTargetsLandOnThePortal(_ target: String) async throws {
        try await LiveGateway.run { gateway in
            var cookies = BrowserCookies()
            let start = try await gateway.get("/signin/start?return_to=" + FormEncoding.escape(target), cookies: [:])
            cookies.absorb(start)
            let authorize = try #require(start.location)
            let form = Self.decision(authorize, account: "alice", password: gateway.built.developmentPassword!)
            let decision = try await gateway.post("/dev-idp/authorize", form: form, cookies: [:])
            let reply = try await gateway.get(try #require(decision.location), cookies: cookies.values)
            #expect(reply.location == "/")
            let page = try await gateway.get("/signin?return_to=" + FormEncoding.escape(target), cookies: [:])
            #expect(!page.body.contains("evil.example"))
        }
    }

    @Test func signOutNeedsTheCSRFTokenThenEndsBothSessions() async throws {
        try await LiveGateway.run { gateway in
            let flow = try await Self.signIn(gateway, deepLink: "/")
            let portal = try await gateway.get("/", cookies: flow.cookies.values)
            let csrf = try #require(portal.body.firstMatch(of: /name="csrf" value="([^"]+)"/)?.1)

            let forged = try await gateway.post("/signout", form: [("csrf", "guess")], cookies: flow.cookies.values)
            #expect(forged.status == 403)
            let crossSite = try await gateway.post(
                "/signout", form: [("csrf", String(csrf))], cookies: flow.cookies.values, headers: [("Origin", "https://evil.example")])
            #expect(crossSite.status == 403)
            #expect(try await gateway.get("/", cookies: flow.cookies.values).status == 200)

            let signOut = try await gateway.post(
                "/signout", form: [("csrf", String(csrf))], cookies: flow.cookies.values, headers: [("Origin", gateway.origin)])
            #expect(signOut.status == 303)
            let endSession = try #require(signOut.location)
            #expect(endSession.hasPrefix(gateway.origin + "/dev-idp/logout?"))
            #expect(endSession.contains("id_token_hint="))
            #expect(endSession.contains("post_logout_redirect_uri=" + FormEncoding.escape(gateway.origin + "/signed-out")))
            #expect(signOut.setCookies.contains { $0.hasPrefix("gatehouse_session=;") && $0.contains("Max-Age=0") })
            let back = try await gateway.get(endSession, cookies: [:])
            #expect(back.location == gateway.origin + "/signed-out")
            #expect(try await gateway.get("/signed-out", cookies: [:]).body.contains("You have been signed out."))

            // The old cookie is worthless now.
            #expect(try await gateway.get("/", cookies: flow.cookies.values).status == 303)
        }
    }

    /// `GET /signout` (the bar's way out) asks first and signs nobody out by itself; it only goes back to the
    /// gateway's own paths.
    @Test func theSignOutPageAsksFirst() async throws {
        try await LiveGateway.run { gateway in
            #expect(try await gateway.get("/signout", cookies: [:]).location == Paths.signIn)
            let flow = try await Self.signIn(gateway, deepLink: "/")
            let page = try await gateway.get("/signout?return_to=%2Fapps%2Fwiki%2Fx%3Fa%3D1", cookies: flow.cookies.values)
            #expect(page.status == 200 && page.body.contains("action=\"/signout\"") && page.body.contains("name=\"csrf\""))
            #expect(page.body.contains("id=\"stay-signed-in\" href=\"/apps/wiki/x?a=1\""))
            #expect(page.headers["cache-control"].first == "no-store")
            for hostile in ["https%3A%2F%2Fevil.example%2F", "%2F%2Fevil.example", "javascript%3Aalert(1)", "%2F%5Cevil.example"] {
                let refused = try await gateway.get("/signout?return_to=" + hostile, cookies: flow.cookies.values)
                #expect(refused.body.contains("id=\"stay-signed-in\" href=\"/\""), "\(hostile)")
            }
            // Asking signed nobody out.
            #expect(try await gateway.get("/", cookies: flow.cookies.values).status == 200)
        }
    }

    @Test func apiCallersGetJSONNotRedirects() async throws {
        try await LiveGateway.run { gateway in
            let reply = try await gateway.get("/chats", cookies: [:], headers: [("Accept", "application/json")])
            #expect(reply.status == 401)
            #expect(reply.body.contains(#""error":"sign_in_required""#))
            let missing = try await gateway.get("/no/such/page", cookies: [:], headers: [("Accept", "application/json")])
            #expect(missing.status == 404)
            #expect(missing.body.contains(#""request_id""#))
            let page = try await gateway.get("/no/such/page", cookies: [:])
            #expect(page.body.contains("Page not found") && page.body.contains("request-id"))
        }
    }

    /// The provider refuses the refresh token: the session ends and the member is told so, keeping the deep link.
    /// The tokens are changed behind the gateway's back, by another process on its PostgreSQL store (as another
    /// replica would), which the gateway must notice despite its cache.
    @Test func aRefusedRefreshSendsTheMemberBackWithTheExpiredMessage() async throws {
        let url = try await TestPostgres.freshDatabase()
        try await LiveGateway.run(configure: { $0.storage = StorageConfiguration.postgres(url) }) { gateway in
            let flow = try await Self.signIn(gateway, deepLink: "/calls")
            #expect(try await gateway.get("/calls", cookies: flow.cookies.values).status == 200)

            let other = try TestPostgres.connect(url)
            try await Stores.postgres(other, keyring: .forTests).whileRunning { stores in
                let id = SessionResolver.sessionID(forCookie: try #require(flow.cookies.values["gatehouse_session"]))
                var session = try #require(try await stores.sessions.find(id: id))
                session.tokens.refreshToken = "revoked-at-the-provider"
                session.tokens.accessTokenExpiresAt = Date().addingTimeInterval(30)
                try await stores.sessions.update(session)
            }
            try await Task.sleep(for: .seconds(1))  // the invalidation bound

            let reply = try await gateway.get("/calls", cookies: flow.cookies.values)
            #expect(reply.status == 303)
            #expect(reply.location == "/signin?return_to=%2Fcalls&expired=1")
            let page = try await gateway.get(try #require(reply.location), cookies: flow.cookies.values)
            #expect(page.body.contains("Your session has expired. Please sign in again."))
            #expect(try await gateway.get("/", cookies: flow.cookies.values).location == "/signin")
            let samples = MetricsTests.samples(gateway.built.metrics.exposition())
            #expect(samples[#"gatehouse_token_refresh_failures_total{reason="refresh_failed"}"#] == 1)
            #expect(samples["gatehouse_token_refreshes_total"] == nil)
        }
    }
}
