import Crypto
import Foundation
import GatehouseCore
import GatehouseStorage
import Logging
import Testing

@testable import Gatehouse

/// The signed identity assertion and the access token, as apps receive them over real sockets: verified with the
/// published keys, addressed to one app, held rather than signed per request, never what the browser claims.
@Suite(.serialized) struct AssertionTests {
    /// The gateway's published keys, as an app fetches them.
    static func publishedKeys(_ gateway: LiveGateway) async throws -> [String: P256.Signing.PublicKey] {
        let reply = try await gateway.get(Paths.assertionKeys, cookies: [:])
        #expect(reply.status == 200 && reply.headers.first(name: "Content-Type") == "application/jwk-set+json")
        #expect(reply.headers.first(name: "Cache-Control") == "public, max-age=300")
        #expect(!reply.body.contains("\"d\""))  // public halves only
        return IdentityAssertion.publicKeys(jwkSet: Data(reply.body.utf8))
    }

    @Test func everyWayToAnAppCarriesAnAssertionTheAppCanVerify() async throws {
        try await ProxyTests.withProxy(configure: { configuration in
            configuration.apps[1].headers.assertion = "X-Pomerium-Jwt-Assertion"  // "other": its own name for it
            configuration.apps[2].headers.assertion = nil  // "chat": none
        }) { gateway, upstream in
            let cookies = try await ProxyTests.signedIn(gateway)
            let keys = try await Self.publishedKeys(gateway)
            #expect(keys.count == 1)
            let forged = [("X-Gatehouse-Assertion", "eyJhbGciOiJub25lIn0.eyJzdWIiOiJhZG1pbiJ9."), ("X-Pomerium-Jwt-Assertion", "forged")]

            // The data plane's way (a page), then the application's (a request with a body).
            let page = try ProxyTests.report(try await gateway.get("/apps/echo/echo/", cookies: cookies, headers: forged))
            #expect(gateway.servedByDataPlane("echo") == 1)
            let posted = try ProxyTests.report(try await gateway.send(.POST, "/apps/echo/echo/", cookies: cookies, headers: forged, body: "x"))
            let token = try #require(page.headers["x-gatehouse-assertion"]?.first)
            #expect(page.headers["x-gatehouse-assertion"]?.count == 1 && posted.headers["x-gatehouse-assertion"] == [token])  // held, not re-signed
            let claims = try IdentityAssertion.verify(token, keys: keys, audience: upstream.origin, now: Date())
            #expect(claims.iss == gateway.configuration.publicOrigin && claims.sub == DevelopmentAccounts.all[0].sub)
            #expect(claims.preferredUsername == "alice" && claims.level == "sso" && claims.exp - claims.iat == 300)
            #expect(!token.contains(cookies.values.first ?? "-"))

            // Another app: its own header, its own audience (an assertion for one app is refused by another).
            let other = try ProxyTests.report(try await gateway.get("/apps/other/", cookies: cookies, headers: forged))
            #expect(other.headers["x-gatehouse-assertion"] == nil)
            let otherToken = try #require(other.headers["x-pomerium-jwt-assertion"]?.first)
            #expect(otherToken != "forged")
            #expect(try IdentityAssertion.verify(otherToken, keys: keys, audience: upstream.origin, now: Date()).sid == claims.sid)
            #expect(throws: IdentityAssertion.VerificationError.wrongAudience(upstream.origin)) {
                try IdentityAssertion.verify(token, keys: keys, audience: "http://wiki.internal", now: Date())
            }

            // A WebSocket's upgrade carries it too.
            let socket = try await ProxyTests.webSocket(gateway, cookies: cookies, path: "ws-headers", send: [])
            let first = try ProxyTests.report(json: try #require(socket.first))
            #expect(first.headers["x-gatehouse-assertion"] == [token])
        }
    }

    @Test func theAccessTokenGoesToTheAppThatAsksForItOnly() async throws {
        try await ProxyTests.withProxy(configure: { $0.apps[0].headers.passAccessToken = true }) { gateway, _ in
            let cookies = try await ProxyTests.signedIn(gateway)
            let forged = [("Authorization", "Bearer stolen")]
            let echo = try ProxyTests.report(try await gateway.get("/apps/echo/echo/", cookies: cookies, headers: forged))
            let bearer = try #require(echo.headers["authorization"]?.first)
            #expect(echo.headers["authorization"]?.count == 1 && bearer.hasPrefix("Bearer ") && bearer != "Bearer stolen")
            // It is the member's real token: the provider's userinfo takes it.
            let userinfo = try await gateway.get(
                gateway.configuration.oidc.issuer + "/userinfo", cookies: [:], headers: [("Authorization", bearer)])
            #expect(userinfo.status == 200 && userinfo.body.contains(DevelopmentAccounts.all[0].sub))
            let other = try ProxyTests.report(try await gateway.get("/apps/other/", cookies: cookies, headers: forged))
            #expect(other.headers["authorization"] == nil)
        }
    }

    /// Keys kept in the store are the same for every replica; a rotation announces the next key before it signs and
    /// keeps the old one published until its last assertion has expired.
    @Test(arguments: StoreBackend.allCases) func replicasShareKeysAndRotationAnnouncesBeforeSigning(backend: StoreBackend) async throws {
        try await backend.withStores { stores in
            let logger = Logger(label: "test")
            let schedule = AssertionKeySchedule(rotation: 30 * 86_400, announcement: 3600, retention: 600)
            let first = AssertionKeyRing(source: .store(stores.assertionKeys, schedule), logger: logger)
            let second = AssertionKeyRing(source: .store(stores.assertionKeys, schedule), logger: logger)
            let start = Date()
            // Two replicas starting together make one key between them.
            try await withThrowingDiscardingTaskGroup { group in
                group.addTask { try await first.refresh(now: start) }
                group.addTask { try await second.refresh(now: start) }
            }
            try await first.refresh(now: start)
            let kid = try #require(first.signing(at: start)?.kid)
            let kept = try await stores.assertionKeys.keys()
            #expect(second.signing(at: start)?.kid == kid && kept.count == 1)

            // Near the end of its 30 days the next key is made and published, but the old one still signs.
            let due = start.addingTimeInterval(30 * 86_400 - 3000)
            try await second.refresh(now: due)
            try await first.refresh(now: due)
            #expect(first.signing(at: due)?.kid == kid && second.signing(at: due)?.kid == kid)
            let published = try #require(try JSONSerialization.jsonObject(with: first.publishedSet) as? [String: [[String: String]]])
            #expect(published["keys"]?.count == 2)
            // From its time on it signs everywhere; the old key goes once its last assertions have expired.
            let switched = due.addingTimeInterval(3600)
            let next = try #require(first.signing(at: switched)?.kid)
            #expect(next != kid && second.signing(at: switched)?.kid == next)
            try await first.refresh(now: switched.addingTimeInterval(601))
            let remaining = try await stores.assertionKeys.keys()
            #expect(remaining.map(\.generation) == [2])
            #expect(!String(decoding: first.publishedSet, as: UTF8.self).contains(kid))
        }
    }
}
