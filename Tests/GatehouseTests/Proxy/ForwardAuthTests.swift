import Crypto
import Foundation
import GatehouseCore
import Testing

@testable import Gatehouse

/// `/auth/verify` as an ingress asks it, over real sockets: who may ask, which app the original URL names, the
/// answers without a session, with one, and when the app's rules refuse; the way back after signing in.
@Suite(.serialized) struct ForwardAuthTests {
    static let wiki = "http://wiki.internal:8080"

    static func configure(trusting: Bool) -> (inout GatehouseConfiguration) -> Void {
        { configuration in
            if trusting { configuration.listen.trustedProxies = ["127.0.0.1"] }
            configuration.apps.append(
                AppConfiguration(
                    slug: "wiki", name: "Wiki", upstream: URL(string: wiki + "/")!, mount: .external,
                    rules: PathRules([.init(paths: ["/admin/*"], action: .deny), .init(paths: ["/audit/*"], require: .init(roles: ["auditor"]))])))
        }
    }

    static func ask(_ gateway: LiveGateway, _ original: String, cookies: [String: String] = [:], method: String? = nil, query: String = "")
        async throws -> LiveGateway.Reply
    {
        var headers = [("X-Original-URL", original)]
        if let method { headers.append(("X-Original-Method", method)) }
        return try await gateway.get(Paths.forwardAuth + query, cookies: cookies, headers: headers)
    }

    @Test func theIngressLearnsWhoTheMemberIsOrWhereTheySignIn() async throws {
        try await LiveGateway.run(configure: Self.configure(trusting: true)) { gateway in
            // Signed out: 401 with the sign-in URL that comes back here; as a redirect for ingresses that pass it on.
            let signedOut = try await Self.ask(gateway, Self.wiki + "/page?x=1")
            let signIn = gateway.origin + Paths.signIn + "?return_to=" + FormEncoding.escape(Self.wiki + "/page?x=1")
            #expect(signedOut.status == 401 && signedOut.location == signIn)
            let redirected = try await Self.ask(gateway, Self.wiki + "/page?x=1", query: "?redirect=1")
            #expect(redirected.status == 302 && redirected.location == signIn)

            // Signed in: the headers to copy, the assertion addressed to the app's public origin.
            let cookies = try await ProxyTests.signedIn(gateway)
            let allowed = try await Self.ask(gateway, Self.wiki + "/page", cookies: cookies)
            #expect(allowed.status == 200 && allowed.headers.first(name: "X-Forwarded-User") == DevelopmentAccounts.all[0].sub)
            #expect(allowed.headers.first(name: "X-Forwarded-For") == nil && allowed.headers.first(name: "Cache-Control") == "no-store")
            let keys = try await AssertionTests.publishedKeys(gateway)
            let token = try #require(allowed.headers.first(name: "X-Gatehouse-Assertion"))
            #expect(try IdentityAssertion.verify(token, keys: keys, audience: Self.wiki, now: Date()).preferredUsername == "alice")
            // Caddy's and Traefik's way of saying the same.
            let caddy = try await gateway.get(
                Paths.forwardAuth, cookies: cookies,
                headers: [
                    ("X-Forwarded-Proto", "http"), ("X-Forwarded-Host", "wiki.internal:8080"), ("X-Forwarded-Uri", "/page"),
                    ("X-Forwarded-Method", "GET"),
                ])
            #expect(caddy.status == 200)

            // The app's rules, on every spelling; a host that is no external app of ours.
            for denied in ["/admin/x", "//admin/x", "/%61dmin/x", "/x/../admin/x", "/admin;a=b/x"] {
                #expect(try await Self.ask(gateway, Self.wiki + denied, cookies: cookies).status == 403, "\(denied)")
            }
            let audit = try await Self.ask(gateway, Self.wiki + "/audit/q3", cookies: cookies)
            #expect(audit.status == 403 && audit.body.contains("auditor"))
            for unknown in ["http://evil.example/page", "http://wiki.internal:8080@evil.example/", "http://wiki.internal:8081/", "not a url"] {
                #expect(try await Self.ask(gateway, unknown, cookies: cookies).status != 200, "\(unknown)")
            }

            // After signing in, the member comes back to the app's URL; never to another host.
            #expect(
                try await gateway.get(Paths.signIn + "?return_to=" + FormEncoding.escape(Self.wiki + "/page"), cookies: cookies).location == Self.wiki
                    + "/page")
            for hostile in [Self.wiki + ".evil.example/", Self.wiki + "@evil.example/", Self.wiki + "//evil.example/", "https://evil.example/"] {
                let reply = try await gateway.get(Paths.signIn + "?return_to=" + FormEncoding.escape(hostile), cookies: cookies)
                #expect(reply.location == Paths.portal, "\(hostile)")
            }

            // Signed out at the gateway: the ingress hears it at once.
            let signOutPage = try await gateway.get(Paths.signOut, cookies: cookies)
            let csrf = try #require(signOutPage.body.firstMatch(of: /name="csrf" value="([^"]+)"/)?.1)
            _ = try await gateway.post(Paths.signOut, form: [("csrf", String(csrf))], cookies: cookies)
            #expect(try await Self.ask(gateway, Self.wiki + "/page", cookies: cookies).status == 401)
        }
    }

    @Test func onlyATrustedProxyMayAsk() async throws {
        try await LiveGateway.run(configure: Self.configure(trusting: false)) { gateway in
            let cookies = try await ProxyTests.signedIn(gateway)
            let reply = try await Self.ask(gateway, Self.wiki + "/page", cookies: cookies)
            #expect(reply.status == 403 && reply.headers.first(name: "X-Forwarded-User") == nil)
        }
    }
}
