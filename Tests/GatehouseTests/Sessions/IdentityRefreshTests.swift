import Foundation
import GatehouseCore
import Testing

@testable import Gatehouse
@testable import GatehouseStorage

/// The member's identity follows the provider: roles and groups from userinfo, the ID token and the access token
/// (Keycloak's roles), read again at every refresh, which comes at least every `oidc.refresh_seconds`; a refreshed ID
/// token is checked before anything of it is believed; an app the member may no longer open closes its WebSockets.
@Suite struct IdentityRefreshTests {
    static func token(_ claims: [String: Any]) throws -> String {
        let body = Base64URL.encode(try JSONSerialization.data(withJSONObject: claims))
        return "eyJhbGciOiJub25lIn0.\(body).c2ln"
    }

    @Test func rolesAndGroupsComeFromUserinfoAndBothTokens() throws {
        let userinfo = MemberIdentity(sub: "ada", email: "ada@example.org", roles: ["user"], groups: ["/staff"])
        let accessToken: [String: Any] = [
            "sub": "ada", "realm_access": ["roles": ["user", "payroll-admin"]],
            "resource_access": ["gatehouse": ["roles": ["viewer"]], "other-client": ["roles": ["not-ours"]]],
        ]
        let idToken: [String: Any] = ["sub": "ada", "groups": ["/staff", "/hr"], "phone_number": "+15550100042", "email": "other@example.org"]
        let merged = MemberClaims.identity(userinfo: userinfo, idToken: idToken, accessToken: accessToken, clientID: "gatehouse")
        #expect(merged.roles == ["user", "payroll-admin", "viewer"])
        #expect(merged.groups == ["/staff", "/hr"])
        #expect(merged.email == "ada@example.org" && merged.phoneNumber == "+15550100042")
        // A token of another subject adds nothing.
        let foreign = MemberClaims.identity(
            userinfo: userinfo, idToken: nil, accessToken: ["sub": "mallory", "realm_access": ["roles": ["admin"]]], clientID: "gatehouse")
        #expect(foreign == userinfo)
        // Opaque access tokens and JWTs read alike.
        #expect(MemberClaims.unverifiedClaims(of: "opaque-token-value") == nil)
        #expect(MemberClaims.unverifiedClaims(of: try Self.token(accessToken))?["sub"] as? String == "ada")
    }

    /// A refreshed ID token is believed only for the session's subject, and with the sign-in's nonce if it has one.
    @Test func aRefreshedIDTokenIsCheckedLikeTheFirst() async throws {
        let provider = try await TestProvider()
        let (verifier, _) = try IDTokenVerifierTests().verifier(provider)
        let good = try await provider.sign(provider.claims(nonce: nil, sub: "member-1"))
        #expect(try await verifier.verifyRefreshed(good, subject: "member-1", signInNonce: "n-1").subject == "member-1")
        let sameNonce = try await provider.sign(provider.claims(nonce: "n-1", sub: "member-1"))
        #expect(try await verifier.verifyRefreshed(sameNonce, subject: "member-1", signInNonce: "n-1").subject == "member-1")
        for hostile in [
            try await provider.sign(provider.claims(nonce: nil, sub: "member-2")),  // another member
            try await provider.sign(provider.claims(nonce: "n-other", sub: "member-1")),  // another sign-in's nonce
            try await provider.sign(provider.claims(iss: "https://elsewhere.example", nonce: nil, sub: "member-1")),
            try await provider.sign(provider.claims(exp: Date().addingTimeInterval(-3600), nonce: nil, sub: "member-1")),
            try TestProvider.forge(header: ["alg": "none"], claims: provider.claims(nonce: nil, sub: "member-1")),
        ] {
            await #expect(throws: OIDCError.self) { try await verifier.verifyRefreshed(hostile, subject: "member-1", signInNonce: "n-1") }
        }
    }

    /// Tokens that live long are refreshed anyway once `interval` old, and the refresh takes the identity the provider
    /// gives now; a refresh whose identity cannot be trusted ends the session.
    @Test(arguments: StoreBackend.allCases) func aRefreshTakesTheIdentityTheProviderGivesNow(backend: StoreBackend) async throws {
        try await SessionLifecycleTests.Harness.with(backend) { harness in
            var session = SessionLifecycleTests.session(cookie: "long-lived", sub: "ada", tokenExpiresIn: 3600)
            session.identity.roles = ["user", "payroll-admin"]
            session.tokens.obtainedAt = Date().addingTimeInterval(-301)
            try await harness.sessions.insert(session)
            let refresher = TokenRefresher(
                store: harness.sessions, window: 60, interval: 300,
                identify: { session, _ throws(OIDCError) in MemberIdentity(sub: session.identity.sub, roles: ["user"]) }
            ) { _, _ throws(OIDCError) in TokenResponse(accessToken: "access-1", idToken: nil, refreshToken: "refresh-1", expiresIn: 3600, tokenType: "Bearer") }
            #expect(refresher.needsRefresh(session))
            var fresh = session
            fresh.tokens.obtainedAt = Date()
            #expect(!refresher.needsRefresh(fresh))
            let resolver = SessionResolver(
                store: harness.sessions, refresher: refresher, events: harness.recorder, configuration: SessionConfiguration(),
                logger: SessionLifecycleTests.logger)
            guard case .active(let refreshed, _) = try await resolver.resolve(cookie: "long-lived") else {
                Issue.record("the session should go on")
                return
            }
            #expect(refreshed.identity.roles == ["user"] && refreshed.tokens.accessToken == "access-1")
            #expect(try await harness.sessions.find(id: session.id)?.identity.roles == ["user"])

            // The provider's answer cannot be trusted (a forged ID token, another subject): the session ends.
            var doubtful = SessionLifecycleTests.session(cookie: "doubtful", sub: "bob", tokenExpiresIn: 10)
            doubtful.tokens.obtainedAt = Date()
            try await harness.sessions.insert(doubtful)
            let refusing = TokenRefresher(
                store: harness.sessions, window: 60, interval: 300,
                identify: { _, _ throws(OIDCError) in throw .invalidIDToken("a refresh changed the subject") }
            ) { _, _ throws(OIDCError) in TokenResponse(accessToken: "access-1", idToken: nil, refreshToken: "refresh-1", expiresIn: 3600, tokenType: "Bearer") }
            let strict = SessionResolver(
                store: harness.sessions, refresher: refusing, events: harness.recorder, configuration: SessionConfiguration(),
                logger: SessionLifecycleTests.logger)
            #expect(try await strict.resolve(cookie: "doubtful") == .expired(timedOutFor: nil))
        }
    }

    /// A member whose group is taken away loses an app that needs it, and its open WebSocket is closed.
    @Test func aWebSocketClosesWhenTheMemberMayNoLongerOpenTheApp() async throws {
        try await ProxyTests.withProxy(configure: { configuration in
            configuration.apps.append(
                AppConfiguration(
                    slug: "staff", name: "Staff", upstream: try! #require(configuration.apps.first).upstream, requiredGroups: ["/staff"]))
        }) { gateway, _ in
            let cookies = try await ProxyTests.signedIn(gateway)
            let first = try await gateway.get("/apps/staff/html", cookies: cookies)
            #expect(first.status == 200, "\(first.status) \(first.body.prefix(300))")
            // The socket is open (its first message echoed) before the groups change, however loaded the machine is.
            let received = ProxyTests.Box()
            async let messages = ProxyTests.webSocket(gateway, cookies: cookies, app: "staff", send: ["hello"], wait: .seconds(1), received: received)
            for _ in 0..<200 where await received.values.isEmpty { try await Task.sleep(for: .milliseconds(50)) }
            // What a refresh stores when the provider no longer lists the group.
            let id = SessionResolver.sessionID(forCookie: try #require(cookies["gatehouse_session"]))
            var session = try #require(try await gateway.built.stores.sessions.find(id: id))
            session.identity.groups = []
            try await gateway.built.stores.sessions.update(session)
            let started = ContinuousClock.now
            #expect(try await messages.last == "(closed)")
            #expect(ContinuousClock.now - started < .seconds(10))
            #expect(try await gateway.get("/apps/staff/html", cookies: cookies).status == 403)
        }
    }
}
