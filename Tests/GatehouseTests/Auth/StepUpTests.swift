import Foundation
import GatehouseCore
import Testing

@testable import Gatehouse

/// A recent sign-in for what matters: rules' `auth_age_seconds` and `acr`, the PIN as a gateway factor, an app's own
/// session limits; pages, script requests, WebSocket upgrades; a provider that does not sign the member in again.
@Suite struct StepUpTests {
    static let navigation = [("Accept", "text/html"), ("Sec-Fetch-Mode", "navigate"), ("Sec-Fetch-Dest", "document")]

    /// The member's session as it will be `seconds` from now: everything it holds of time (the sign-in, the last
    /// activity, what the member proved) that much older, in the store, as a busy test machine's clock cannot be
    /// relied on to make it.
    static func age(_ gateway: LiveGateway, cookies: [String: String], by seconds: TimeInterval) async throws {
        let id = SessionResolver.sessionID(forCookie: try #require(cookies["gatehouse_session"]))
        let sessions = gateway.built.stores.sessions
        var session = try #require(try await sessions.find(id: id))
        session.createdAt -= seconds
        session.lastSeenAt -= seconds
        try await sessions.update(session)
        var assurance = session.assurance ?? Assurance()
        assurance.authenticatedAt = assurance.authenticatedAt.map { $0 - seconds }
        assurance.pinVerifiedAt = assurance.pinVerifiedAt.map { $0 - seconds }
        try await sessions.setAssurance(assurance, sessionID: id)
    }

    /// Follows a step-up from its sign-in link through the development provider (at `acr`) back to the gateway, in
    /// the browser holding `cookies`; the callback's answer.
    static func signInAgain(_ gateway: LiveGateway, from link: String, cookies: inout BrowserCookies, acr: String = "silver") async throws
        -> LiveGateway.Reply
    {
        let start = try await gateway.get(link, cookies: cookies.values)
        cookies.absorb(start)
        let authorize = try #require(start.location)
        let page = try await gateway.get(authorize, cookies: [:])
        #expect(page.body.contains("id=\"dev-reauth\"") == authorize.contains("prompt=login"))
        let form = SignInFlowTests.decision(authorize, account: "alice", password: gateway.built.developmentPassword!) + [("acr", acr)]
        let decision = try await gateway.post("/dev-idp/authorize", form: form, cookies: [:])
        let callback = try await gateway.get(try #require(decision.location), cookies: cookies.values)
        cookies.absorb(callback)
        return callback
    }

    @Test func aStaleSignInGoesToTheProviderWithMaxAgeAndComesBackToThePath() async throws {
        try await ProxyTests.withProxy(configure: {
            $0.apps[0].rules = PathRules([.init(paths: ["/echo/payroll/*"], require: .init(authAgeSeconds: 60))])
        }) { gateway, _ in
            var cookies = BrowserCookies()
            cookies.values = try await ProxyTests.signedIn(gateway)
            let session = cookies.values["gatehouse_session"]
            #expect(try await gateway.get("/apps/echo/echo/payroll/slips?month=3", cookies: cookies.values).status == 200)
            try await Self.age(gateway, cookies: cookies.values, by: 61)

            // A page: to the provider and back. A script's request and an API caller: 401 naming the same link.
            let stale = try await gateway.get("/apps/echo/echo/payroll/slips?month=3", cookies: cookies.values, headers: Self.navigation)
            #expect(stale.status == 303)
            let link = try #require(stale.location)
            #expect(link == gateway.origin + "/signin/start?return_to=%2Fapps%2Fecho%2Fecho%2Fpayroll%2Fslips%3Fmonth%3D3&max_age=60")
            for headers in [[("Accept", "application/json")], [("Sec-Fetch-Mode", "cors"), ("Sec-Fetch-Dest", "empty")]] {
                let api = try await gateway.get("/apps/echo/echo/payroll/slips?month=3", cookies: cookies.values, headers: headers)
                #expect(api.status == 401 && api.body.contains(#""error":"reauthentication_required""#), "\(api.body)")
                #expect(api.body.contains(#""sign_in_url":""#) && api.body.contains("max_age=60"))
            }
            // Paths without the rule go on as they were.
            #expect(try await gateway.get("/apps/echo/echo/other", cookies: cookies.values).status == 200)

            let start = try await gateway.get(link, cookies: cookies.values)
            let authorize = try #require(start.location)
            #expect(authorize.contains("max_age=60") && authorize.contains("prompt=login"))
            let back = try await Self.signInAgain(gateway, from: link, cookies: &cookies)
            #expect(back.status == 303 && back.location == "/apps/echo/echo/payroll/slips?month=3")
            // The same session (and its jar) goes on: no new session cookie.
            #expect(cookies.values["gatehouse_session"] == session)
            let opened = try await gateway.get("/apps/echo/echo/payroll/slips?month=3", cookies: cookies.values, headers: Self.navigation)
            #expect(opened.status == 200)
            #expect(try ProxyTests.report(opened).path == "/echo/payroll/slips?month=3")
        }
    }

    @Test func aLevelOfAuthenticationIsAskedForAndCheckedOnReturn() async throws {
        try await ProxyTests.withProxy(configure: {
            $0.apps[0].rules = PathRules([.init(paths: ["/echo/vault/*"], require: .init(acr: ["gold"]))])
        }) { gateway, _ in
            var cookies = BrowserCookies()
            cookies.values = try await ProxyTests.signedIn(gateway)
            let asked = try await gateway.get("/apps/echo/echo/vault/x", cookies: cookies.values, headers: Self.navigation)
            let link = try #require(asked.location)
            #expect(link.hasSuffix("&acr=gold"))
            let start = try await gateway.get(link, cookies: cookies.values)
            #expect(try #require(start.location).contains("acr_values=gold") && !start.location!.contains("prompt=login"))

            // The member picks the weaker level at the provider: refused on return, not trusted.
            let weaker = try await Self.signInAgain(gateway, from: link, cookies: &cookies, acr: "silver")
            #expect(weaker.location?.hasPrefix("/signin?error=not_reauthenticated") == true, "\(weaker.location ?? "")")
            #expect(try await gateway.get("/apps/echo/echo/vault/x", cookies: cookies.values, headers: Self.navigation).status == 303)
            let gold = try await Self.signInAgain(gateway, from: link, cookies: &cookies, acr: "gold")
            #expect(gold.location == "/apps/echo/echo/vault/x")
            #expect(try await gateway.get("/apps/echo/echo/vault/x", cookies: cookies.values, headers: Self.navigation).status == 200)
        }
    }

    @Test func aWebSocketUpgradeAsksTheSameGate() async throws {
        try await ProxyTests.withProxy(configure: {
            $0.apps[0].rules = PathRules([.init(paths: ["/ws"], require: .init(authAgeSeconds: 60))])
        }) { gateway, _ in
            let cookies = try await ProxyTests.signedIn(gateway)
            #expect(try await ProxyTests.webSocket(gateway, cookies: cookies, send: ["fresh"]).count == 2)
            try await Self.age(gateway, cookies: cookies, by: 61)
            await #expect(throws: (any Error).self) { _ = try await ProxyTests.webSocket(gateway, cookies: cookies, send: ["stale"]) }
            let handshake = try await gateway.get(
                "/apps/echo/ws", cookies: cookies,
                headers: [("Connection", "Upgrade"), ("Upgrade", "websocket"), ("Sec-Fetch-Mode", "websocket"), ("Origin", gateway.origin)])
            #expect(handshake.status == 401 && handshake.body.contains("sign_in_url"), "\(handshake.status) \(handshake.body)")
        }
    }

    @Test func anAppsOwnIdleLimitAsksForASignInAfterAPause() async throws {
        try await ProxyTests.withProxy(configure: { $0.apps[0].sessionLimits = AppSessionLimits(idleSeconds: 120) }) { gateway, _ in
            var cookies = BrowserCookies()
            cookies.values = try await ProxyTests.signedIn(gateway)
            #expect(try await gateway.get("/apps/echo/echo/page", cookies: cookies.values, headers: Self.navigation).status == 200)
            // A pause within the limit, then activity (a gateway page counts as any app's), keeps it open.
            try await Self.age(gateway, cookies: cookies.values, by: 100)
            #expect(try await gateway.get("/apps/echo/echo/page", cookies: cookies.values, headers: Self.navigation).status == 200)
            #expect(try await gateway.get("/", cookies: cookies.values).status == 200)
            try await Self.age(gateway, cookies: cookies.values, by: 100)
            #expect(try await gateway.get("/apps/echo/echo/page", cookies: cookies.values, headers: Self.navigation).status == 200)

            try await Self.age(gateway, cookies: cookies.values, by: 121)
            let paused = try await gateway.get("/apps/echo/echo/page", cookies: cookies.values, headers: Self.navigation)
            #expect(paused.status == 303 && paused.location?.contains("max_age=120") == true, "\(paused.location ?? "")")
            // The gateway's own pages are not the app's: they stay open.
            #expect(try await gateway.get("/", cookies: cookies.values).status == 200)
            let back = try await Self.signInAgain(gateway, from: try #require(paused.location), cookies: &cookies)
            #expect(back.location == "/apps/echo/echo/page")
            #expect(try await gateway.get("/apps/echo/echo/page", cookies: cookies.values, headers: Self.navigation).status == 200)
        }
    }

    @Test func aRuleByNetworkReadsTheClientThroughTheTrustedProxy() async throws {
        try await ProxyTests.withProxy(configure: {
            $0.apps[0].rules = PathRules([.init(paths: ["/echo/office/*"], require: .init(networks: [IPNetwork("10.20.0.0/16")!]))])
            $0.listen.trustedProxies = ["127.0.0.1"]
        }) { gateway, _ in
            let cookies = try await ProxyTests.signedIn(gateway)
            let inside = try await gateway.get("/apps/echo/echo/office/desk", cookies: cookies, headers: [("X-Forwarded-For", "10.20.3.4")])
            #expect(inside.status == 200)
            // The client's own claim left of the proxy's entry is not believed.
            for forwarded in ["10.20.3.4, 198.51.100.7", "198.51.100.7", "not-an-address"] {
                let outside = try await gateway.get(
                    "/apps/echo/echo/office/desk", cookies: cookies, headers: [("X-Forwarded-For", forwarded), ("Accept", "text/html")])
                #expect(outside.status == 403 && outside.body.contains("only from the organization"), "\(forwarded)")
            }
            let api = try await gateway.send(
                .POST, "/apps/echo/echo/office/desk", cookies: cookies, headers: [("X-Forwarded-For", "198.51.100.7"), ("Accept", "application/json")],
                body: "x")
            #expect(api.status == 403 && api.body.contains("path_not_allowed"), "\(api.body)")
        }
    }

    @Test func aProviderThatDoesNotSignTheMemberInAgainIsRefused() async throws {
        let provider = try await TestProvider()
        let lax = LaxProvider(provider: provider, authTime: Date().addingTimeInterval(-3600), acr: "silver", subject: "lax-member")
        try await lax.run { issuer in
            try await ProxyTests.withProxy(configure: {
                $0.oidc.issuer = issuer
                $0.apps[0].rules = PathRules([.init(paths: ["/echo/payroll/*"], require: .init(authAgeSeconds: 300, acr: ["gold"]))])
            }) { gateway, _ in
                var cookies = BrowserCookies()
                let first = try await gateway.get("/signin/start", cookies: [:])
                cookies.absorb(first)
                let code = try await gateway.get(try #require(first.location), cookies: [:])
                let signedIn = try await gateway.get(try #require(code.location), cookies: cookies.values)
                cookies.absorb(signedIn)
                #expect(signedIn.status == 303 && cookies.values["gatehouse_session"] != nil)
                // An hour-old sign-in opens the portal, not the payroll.
                let asked = try await gateway.get("/apps/echo/echo/payroll/x", cookies: cookies.values, headers: Self.navigation)
                let link = try #require(asked.location)
                let start = try await gateway.get(link, cookies: cookies.values)
                cookies.absorb(start)
                let answer = try await gateway.get(try #require(start.location), cookies: [:])
                let back = try await gateway.get(try #require(answer.location), cookies: cookies.values)
                #expect(back.location?.hasPrefix("/signin?error=not_reauthenticated") == true, "\(back.location ?? "")")
                #expect(lax.asked.withLockedValue { $0.last?["max_age"] == "300" && $0.last?["prompt"] == "login" && $0.last?["acr_values"] == "gold" })
                #expect(try await gateway.get("/apps/echo/echo/payroll/x", cookies: cookies.values, headers: Self.navigation).status == 303)
                #expect(gateway.built.metrics.exposition().contains(#"gatehouse_step_ups_total{reason="not_reauthenticated"} 1"#))
            }
        }
    }

    /// `require.pin_age_seconds`: a registered member enters their PIN once for a while (a wrong one counted as
    /// codes are, up to the lock); a member at `sso`, who has none, stands on a sign-in as recent.
    @Test func thePINIsAskedOnceForAWhileWithTheTriesOfCodes() async throws {
        try await EchoUpstream.run { upstream in
            try await UpgradeFlowTests.live(configure: {
                $0.apps = ProxyTests.apps(upstream, unreachablePort: 9)
                $0.apps[0].rules = PathRules([.init(paths: ["/echo/vault/*"], require: .init(pinAgeSeconds: 60))])
            }) { gateway in
                let alice = try await UpgradeFlowTests.Member.signIn(gateway, as: "alice")
                let vault = "/apps/echo/echo/vault/x"
                #expect(try await gateway.get(vault, cookies: alice.cookies.values, headers: Self.navigation).status == 200)
                _ = try await alice.register(username: "alice.a")

                let asked = try await gateway.get(vault, cookies: alice.cookies.values, headers: Self.navigation)
                #expect(asked.status == 303 && asked.location == gateway.origin + "/signin/pin?return_to=%2Fapps%2Fecho%2Fecho%2Fvault%2Fx")
                let json = try await gateway.get(vault, cookies: alice.cookies.values, headers: [("Accept", "application/json")])
                #expect(json.status == 401 && json.body.contains(#""error":"pin_required""#))
                let page = try await alice.get("/signin/pin?return_to=%2Fapps%2Fecho%2Fecho%2Fvault%2Fx")
                #expect(page.status == 200 && page.body.contains("Enter your PIN"))
                let wrong = try await alice.post("/signin/pin", [("return_to", vault), ("pin", "0000")])
                #expect(wrong.status == 422 && wrong.body.contains("4 tries left"))
                // A form from another origin, or without its token, is refused before any PIN is compared.
                #expect(try await alice.post("/signin/pin", [("return_to", vault), ("pin", "2580")], origin: "https://evil.example").status == 403)
                // Where it sends the member back is checked: never off the gateway.
                let offsite = try await alice.post("/signin/pin", [("return_to", "https://evil.example/"), ("pin", "2580")])
                #expect(offsite.status == 303 && offsite.location == "/")
                let right = try await alice.post("/signin/pin", [("return_to", vault), ("pin", "2580")])
                #expect(right.status == 303 && right.location == vault)
                #expect(try await gateway.get(vault, cookies: alice.cookies.values, headers: Self.navigation).status == 200)

                try await Self.age(gateway, cookies: alice.cookies.values, by: 61)
                #expect(try await gateway.get(vault, cookies: alice.cookies.values, headers: Self.navigation).location?.contains("/signin/pin") == true)
                var last: LiveGateway.Reply?
                for _ in 0..<5 { last = try await alice.post("/signin/pin", [("return_to", vault), ("pin", "1111")]) }
                #expect(last?.body.contains("Too many wrong PINs") == true)
                let locked = try await alice.post("/signin/pin", [("return_to", vault), ("pin", "2580")])
                #expect(locked.status == 429 && locked.body.contains("Too many wrong PINs"))
                #expect(try await gateway.get(vault, cookies: alice.cookies.values, headers: Self.navigation).status == 303)
            }
        }
    }
}

/// What a sign-in's ID token proves, against what a step-up asked: hostile and careless answers.
@Suite struct SignInProofTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let attempt = LoginAttempt(
        state: "s", browserBindingHash: "b", nonce: "n", codeVerifier: "v", returnTo: "/", createdAt: now.addingTimeInterval(-20),
        stepUp: StepUpRequest(maxAge: 60, acr: ["gold"]))

    static func claims(authTime: Date?, acr: String? = "gold") -> IDTokenClaims {
        IDTokenClaims(
            issuer: "i", subject: "s", audience: ["c"], expiresAt: now + 300, issuedAt: now, nonce: "n", authTime: authTime, acr: acr)
    }

    static func proof(_ claims: IDTokenClaims, previous: Assurance? = nil, attempt: LoginAttempt = attempt) -> Result<Assurance, OIDCError> {
        Result { () throws(OIDCError) in try SignInProof.assurance(of: claims, for: attempt, previous: previous, clockSkew: 10, now: now) }
    }

    @Test func aFreshAuthenticationIsCountedByTheGatewaysClock() throws {
        // During the attempt (the provider's clock 5 s behind ours): counted from the attempt's start at the earliest.
        #expect(try Self.proof(Self.claims(authTime: Self.now.addingTimeInterval(-25))).get().authenticatedAt == Self.now.addingTimeInterval(-20))
        #expect(try Self.proof(Self.claims(authTime: Self.now.addingTimeInterval(-5))).get().authenticatedAt == Self.now.addingTimeInterval(-5))
        // A clock ahead of ours proves nothing more than now.
        #expect(try Self.proof(Self.claims(authTime: Self.now.addingTimeInterval(90))).get().authenticatedAt == Self.now)
        // Before the attempt, yet within max_age (the member signed in again elsewhere a moment ago): fine.
        #expect(try Self.proof(Self.claims(authTime: Self.now.addingTimeInterval(-50))).get().authenticatedAt == Self.now.addingTimeInterval(-50))
        // The PIN entered earlier is kept.
        let pin = Assurance(authenticatedAt: Self.now.addingTimeInterval(-3600), pinVerifiedAt: Self.now.addingTimeInterval(-9))
        #expect(try Self.proof(Self.claims(authTime: Self.now), previous: pin).get().pinVerifiedAt == pin.pinVerifiedAt)
    }

    @Test(arguments: [
        ("no auth_time", nil as Double?, "gold" as String?, nil as Double?),
        ("older than max_age", -61, "gold", nil), ("the session's own", -3600, "gold", -3600), ("not newer than the session's", -5, "gold", -5),
        ("another class", 0, "silver", nil), ("no class", 0, nil, nil),
    ])
    func anAnswerThatDoesNotShowWhatWasAskedIsRefused(case name: String, authTime: Double?, acr: String?, previous: Double?) {
        let previous = previous.map { Assurance(authenticatedAt: Self.now.addingTimeInterval($0)) }
        let result = Self.proof(Self.claims(authTime: authTime.map { Self.now.addingTimeInterval($0) }, acr: acr), previous: previous)
        guard case .failure(.notReauthenticated) = result else {
            Issue.record("\(name): \(result)")
            return
        }
    }

    @Test func aPlainSignInTakesWhatTheTokenSays() throws {
        var plain = Self.attempt
        plain.stepUp = nil
        let old = Self.now.addingTimeInterval(-7200)
        #expect(try Self.proof(Self.claims(authTime: old, acr: "silver"), attempt: plain).get() == Assurance(authenticatedAt: old, acr: "silver"))
        #expect(try Self.proof(Self.claims(authTime: nil, acr: nil), attempt: plain).get() == Assurance())
    }
}
