import Foundation
import GatehouseCore
import HTTPTypes
import HummingbirdWSClient
import Logging
import NIOSSL
import Testing

@testable import Gatehouse

/// The proxy over real sockets: a signed-in member, the gateway, and an echo upstream that reports what it got.
@Suite(.serialized) struct ProxyTests {
    static func apps(_ upstream: EchoUpstream, unreachablePort: Int = 9) -> [AppConfiguration] {
        [
            AppConfiguration(slug: "echo", name: "Echo", upstream: URL(string: upstream.origin + "/")!),
            AppConfiguration(slug: "other", name: "Other", upstream: URL(string: upstream.origin + "/echo/")!),
            AppConfiguration(slug: "chat", name: "Chat", upstream: URL(string: upstream.origin + "/echo/")!, minimumLevel: .registered),
            AppConfiguration(slug: "admin", name: "Admin", upstream: URL(string: upstream.origin + "/")!, requiredRoles: ["admin"]),
            AppConfiguration(slug: "down", name: "Down", upstream: URL(string: "http://127.0.0.1:\(unreachablePort)/")!),
        ]
    }

    static func withProxy(
        configure: @escaping (inout GatehouseConfiguration) -> Void = { _ in }, _ body: (LiveGateway, EchoUpstream) async throws -> Void
    ) async throws {
        try await EchoUpstream.run { upstream in
            let closedPort = try await LiveGateway.freePort()
            try await LiveGateway.run(configure: {
                $0.apps = Self.apps(upstream, unreachablePort: closedPort)
                configure(&$0)
            }) { gateway in try await body(gateway, upstream) }
        }
    }

    /// A member signed in and landed on the portal, as a browser does: the session and its jar are in the state
    /// cache, so the member's app requests are the data plane's from the first.
    static func signedIn(_ gateway: LiveGateway, as username: String = "alice") async throws -> [String: String] {
        let flow = try await SignInFlowTests.signIn(gateway, as: username, deepLink: "/")
        #expect(try await gateway.get("/", cookies: flow.cookies.values).status == 200)
        return flow.cookies.values
    }

    static func report(_ reply: LiveGateway.Reply) throws -> (headers: [String: [String]], path: String, bodyBytes: Int) {
        try report(json: reply.body)
    }

    /// What the echo upstream says it received (a plain request's body, or a WebSocket's first message).
    static func report(json text: String) throws -> (headers: [String: [String]], path: String, bodyBytes: Int) {
        let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        return (object["headers"] as? [String: [String]] ?? [:], object["path"] as? String ?? "", object["bodyBytes"] as? Int ?? -1)
    }

    /// Headers a hostile client sends hoping an app trusts them: identity, routing, addresses, credentials.
    static let hostileRequestHeaders: [(String, String)] = [
        ("X-Forwarded-User", "admin"), ("x_forwarded_email", "boss@example.org"), ("X-Auth-Request-User", "admin"),
        ("X-Forwarded-For", "6.6.6.6"), ("Forwarded", "for=6.6.6.6"), ("X-Real-IP", "6.6.6.6"), ("X-Webauth-User", "admin"),
        ("X-Webauth-Email", "admin@example.org"), ("X-Original-URL", "/admin"), ("X-Rewrite-URL", "/admin"),
        ("CF-Connecting-IP", "6.6.6.6"), ("X-Originating-IP", "6.6.6.6"), ("True-Client-IP", "6.6.6.6"), ("X-Client-IP", "6.6.6.6"),
        ("X-Remote-User", "admin"), ("Remote-User", "admin"), ("X-User", "admin"), ("X-Remote-Addr", "127.0.0.1"),
        ("X-Host", "evil.example"), ("X-Forwarded-Server", "evil.example"), ("X-HTTP-Method-Override", "DELETE"),
        ("X-Original-Method", "DELETE"), ("X-Proxy-User", "admin"), ("X-Gatehouse-Level", "registered"), ("Authorization", "Bearer stolen"),
        ("Proxy-Authorization", "Basic x"), ("Connection", "X-Secret"), ("X-Secret", "drop me"), ("X_Webauth_User", "admin"),
        // Every family, in other spellings: case, `_` for `-`.
        ("x-FORWARDED-user", "admin"), ("X_Remote_User", "admin"), ("REMOTE_USER", "admin"), ("Remote-Email", "boss@example.org"),
        ("Remote-Groups", "admins"), ("X-Auth-Request-Email", "boss@example.org"), ("X-AMZN-OIDC-IDENTITY", "admin"),
        ("X-Goog-Authenticated-User-Email", "accounts.google.com:boss@example.org"), ("X-MS-CLIENT-PRINCIPAL-NAME", "admin"),
        ("X-SSL-Client-S-DN", "CN=admin"), ("SSL_CLIENT_S_DN", "CN=admin"), ("X-Client-Cert", "MIIB"), ("X-Pomerium-Claim-Email", "boss@example.org"),
        ("X-Authentik-Username", "admin"), ("X-Authenticated-Userid", "admin"), ("X-Consumer-Username", "admin"), ("OIDC_CLAIM_sub", "admin"),
        ("Oidc-Claim-Email", "boss@example.org"), ("X-Envoy-Internal", "true"), ("Via", "1.1 evil"), ("Tracestate", "evil=1"),
        ("X-Method-Override", "DELETE"), ("X-HTTP-Method", "DELETE"), ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
        ("Cf-Ipcountry", "XX"), ("X-Cluster-Client-IP", "6.6.6.6"), ("X-Gatehouse-CSRF", "forged"),
    ]

    /// Headers apps send of their own (an id-bearing CSRF header, Kibana's, Atlassian's, Grafana's, Transmission's…):
    /// each reaches the app as sent.
    static let appsOwnHeaders: [(String, String)] = [
        ("X-App", "passed"), ("X-CSRF-Token-ABC12", "token-1"), ("kbn-xsrf", "true"), ("X-Atlassian-Token", "no-check"),
        ("X-Grafana-Org-Id", "1"), ("X-Requested-By", "ui"), ("X-Transmission-Session-Id", "session-1"), ("X-Api-Version", "2"),
    ]

    @Test func upstreamSeesTheGatewaysIdentityHeadersAndNothingTheClientClaimed() async throws {
        // Another app's identity header is the gateway's to set, towards this app too.
        try await Self.withProxy(configure: { $0.apps[1].headers.identity["X-Team-Member"] = .sub }) { gateway, upstream in
            var cookies = try await Self.signedIn(gateway)
            cookies["tracker"] = "from-browser"
            let browserHeaders = [
                ("Accept", "text/html"), ("Accept-Language", "en"), ("If-None-Match", "\"v1\""), ("Range", "bytes=0-10"),
                ("User-Agent", "Browser/1.0"), ("Sec-Fetch-Mode", "navigate"), ("Sec-CH-UA-Mobile", "?0"),
            ]
            let otherAppsIdentity = [("X-Team-Member", "admin")]
            let reply = try await gateway.get(
                "/apps/echo/echo/x?q=1", cookies: cookies,
                headers: Self.hostileRequestHeaders + otherAppsIdentity + browserHeaders + Self.appsOwnHeaders)
            #expect(reply.status == 200)
            #expect(gateway.servedByDataPlane("echo") == 1)
            let received = try Self.report(reply)
            #expect(received.path == "/echo/x?q=1")
            #expect(received.headers["x-forwarded-user"] == [DevelopmentAccounts.all[0].sub])
            #expect(received.headers["x-forwarded-email"] == ["alice@example.org"])
            #expect(received.headers["x-forwarded-for"] == ["127.0.0.1"])
            #expect(received.headers["x-forwarded-proto"] == ["http"])
            // The host the browser named (with its port), the mount the app was not told, and the same as `Forwarded`.
            let gatewayHost = String(gateway.origin.dropFirst("http://".count))
            #expect(received.headers["x-forwarded-host"] == [gatewayHost])
            #expect(received.headers["x-forwarded-prefix"] == ["/apps/echo"])
            #expect(received.headers["forwarded"] == ["for=127.0.0.1;host=\"\(gatewayHost)\";proto=http"])
            #expect(received.headers["host"] == ["127.0.0.1:\(upstream.port)"])
            for (name, _) in Self.hostileRequestHeaders + otherAppsIdentity where !name.lowercased().hasPrefix("x-forwarded-") && name != "Forwarded" {
                #expect(received.headers[name.lowercased()] == nil, "\(name)")
            }
            #expect(received.headers["x_forwarded_email"] == nil)
            // What browsers send on their own account goes through, and what apps send of their own.
            for (name, value) in browserHeaders + Self.appsOwnHeaders { #expect(received.headers[name.lowercased()] == [value], "\(name)") }
            // Neither the gateway's session cookie nor the browser's own cookies go upstream.
            #expect(received.headers["cookie"] == nil)
        }
    }

    /// Behind a load balancer the operator trusts, the app learns the client the balancer saw, never a hop the
    /// client wrote itself; the data plane serves the member from the network they signed in from, and leaves a
    /// request from another to the application (which flags it: `SessionNetworkTests`).
    @Test func behindATrustedBalancerTheAppSeesTheRealClient() async throws {
        try await Self.withProxy(configure: { $0.listen.trustedProxies = ["127.0.0.1"] }) { gateway, _ in
            let flow = try await SignInFlowTests.signIn(gateway, deepLink: "/", headers: [("X-Forwarded-For", "203.0.113.9")])
            let cookies = flow.cookies.values
            #expect(try await gateway.get("/", cookies: cookies, headers: [("X-Forwarded-For", "203.0.113.9")]).status == 200)
            let forged = [("X-Forwarded-For", "6.6.6.6"), ("X-Forwarded-For", "203.0.113.5")]
            let received = try Self.report(try await gateway.get("/apps/echo/echo/", cookies: cookies, headers: forged))
            #expect(received.headers["x-forwarded-for"] == ["203.0.113.5"])
            #expect(gateway.servedByDataPlane("echo") == 1)
            let garbage = try Self.report(try await gateway.get("/apps/echo/echo/", cookies: cookies, headers: [("X-Forwarded-For", "evil")]))
            #expect(garbage.headers["x-forwarded-for"] == ["127.0.0.1"])
            #expect(gateway.servedByDataPlane("echo") == 1)
        }
    }

    @Test func anAppGetsWhatItsConfigurationPassesAndIdentityUnderItsOwnNames() async throws {
        try await Self.withProxy(configure: { configuration in
            configuration.apps[0].headers = AppHeaderConfiguration(
                passAuthorization: true, passHeaders: ["X-CSRF-Token-*", "X-Api-Version", "X-Forwarded-User"],
                identity: ["X-Webauth-User": .preferredUsername, "X-Webauth-Groups": .groups], strictRequestHeaders: true)
        }) { gateway, _ in
            let cookies = try await Self.signedIn(gateway)
            let received = try Self.report(
                try await gateway.get("/apps/echo/echo/", cookies: cookies, headers: Self.hostileRequestHeaders + Self.appsOwnHeaders))
            #expect(received.headers["x-webauth-user"] == ["alice"])  // from the gateway, never the client's "admin"
            #expect(received.headers["x-webauth-email"] == nil)
            #expect(received.headers["x-forwarded-user"] == nil)  // this app's identity headers replace the default ones
            #expect(received.headers["authorization"] == ["Bearer stolen"])
            // Strict: browsers' own headers and what it names (by pattern too), nothing else of the app's kind; a
            // name the gateway owns stays the gateway's even when listed.
            #expect(received.headers["x-csrf-token-abc12"] == ["token-1"] && received.headers["x-api-version"] == ["2"])
            #expect(received.headers["x-app"] == nil && received.headers["kbn-xsrf"] == nil)
            #expect(received.headers["x-original-url"] == nil && received.headers["cf-connecting-ip"] == nil)
            #expect(gateway.servedByDataPlane("echo") == 1)
        }
    }

    @Test func cookiesLiveInTheServerSideJarSharedByAppsAndIsolatedBetweenMembers() async throws {
        try await Self.withProxy { gateway, _ in
            let alice = try await Self.signedIn(gateway)
            let set = try await gateway.get(
                "/apps/echo/set-cookie?c=app%3D1%3B%20Path%3D%2F&c=secure%3D2%3B%20Secure%3B%20Path%3D%2F&c=evil%3D3%3B%20Domain%3Dexample.org",
                cookies: alice)
            #expect(set.status == 200)
            #expect(set.setCookies.isEmpty)  // the browser never sees an app's cookies
            let other = try Self.report(try await gateway.get("/apps/other/", cookies: alice))
            #expect(other.headers["cookie"]?.joined(separator: "; ") == "app=1; secure=2")  // domain=example.org was refused
            // The cookies were set on the event loop, into the cached jar first. (The next request goes the
            // application's way if the cache has dropped the jar's entry meanwhile, as it does when a load races a
            // write: either path reads the same jar, which is what this test is about.)
            #expect(gateway.servedByDataPlane("echo") == 1)

            let bob = try await Self.signedIn(gateway, as: "bob")
            #expect(try Self.report(try await gateway.get("/apps/other/", cookies: bob)).headers["cookie"] == nil)

            // Signing out deletes the jar: the next session of the same member starts empty.
            let portal = try await gateway.get("/", cookies: alice)
            let csrf = try #require(portal.body.firstMatch(of: /name="csrf" value="([^"]+)"/)?.1)
            _ = try await gateway.post("/signout", form: [("csrf", String(csrf))], cookies: alice)
            let again = try await Self.signedIn(gateway)
            #expect(try Self.report(try await gateway.get("/apps/other/", cookies: again)).headers["cookie"] == nil)
        }
    }

    @Test func pathsCannotClimbOutOfTheAppsBasePath() async throws {
        try await Self.withProxy { gateway, _ in
            let cookies = try await Self.signedIn(gateway)
            for hostile in [
                "/apps/other/../set-cookie", "/apps/other/%2e%2e/set-cookie", "/apps/other/%2E%2e%2fset-cookie", "/apps/other/x/..%5c..%5cset-cookie",
                "/apps/other/./x",
            ] {
                let reply = try await gateway.get(hostile, cookies: cookies)
                #expect(reply.status == 400, "\(hostile)")
            }
            #expect(try await gateway.get("/apps/other/a..b", cookies: cookies).status == 200)
        }
    }

    /// An app's error to a page the member opened, with nothing to show: a page of the gateway's with the bar that
    /// names the app and what it said, and the ways on; served by the data plane. An app's own error page, a fetch,
    /// and a redirect are left as they are.
    @Test func anAppsEmptyErrorBecomesAPageWithTheWayOn() async throws {
        try await Self.withProxy { gateway, _ in
            let cookies = try await Self.signedIn(gateway)
            let served = gateway.servedByDataPlane("echo")
            for (status, heading) in [(404, "Echo has no page at this address"), (403, "Echo would not show this page"), (502, "Echo had a problem")]
            {
                for type in ["text/html", "text/plain", "application/octet-stream"] {
                    let reply = try await gateway.get(
                        "/apps/echo/respond?status=\(status)&body=&type=" + FormEncoding.escape(type), cookies: cookies,
                        headers: GatewayBarTests.document)
                    #expect(reply.status == status && reply.headers.first(name: "Content-Type") == "text/html; charset=utf-8", "\(status) \(type)")
                    #expect(reply.body.contains(heading) && reply.body.contains("answered \(status)"), "\(status) \(type)")
                    // The bar, and the ways on: the app's start, the web apps, whom to ask; the gateway's links not rewritten.
                    #expect(reply.body.contains("<gatehouse-bar id=\"gatehouse-bar\""))
                    #expect(
                        reply.body.contains("id=\"app-error-start\" href=\"/apps/echo/\"")
                            && reply.body.contains("id=\"app-error-portal\" href=\"/\""))
                    #expect(reply.body.contains("tell the people who run Echo"))
                }
            }
            #expect(gateway.servedByDataPlane("echo") == served + 9)
            // Not for a fetch: the empty body stays empty. Not for the app's own error page. Not for a success.
            let fetch = try await gateway.get("/apps/echo/respond?status=404&body=", cookies: cookies)
            #expect(fetch.status == 404 && fetch.body.isEmpty)
            let own = try await gateway.get(
                "/apps/echo/respond?status=404&body=" + FormEncoding.escape("<html><body>Own words</body></html>"), cookies: cookies,
                headers: GatewayBarTests.document)
            #expect(own.body.contains("Own words") && !own.body.contains("has no page") && own.body.contains("<gatehouse-bar"))
            let empty = try await gateway.get("/apps/echo/respond?status=200&body=", cookies: cookies, headers: GatewayBarTests.document)
            #expect(empty.status == 200 && !empty.body.contains("app-error"))
        }
    }

    @Test func redirectsStayInsideTheGateway() async throws {
        try await Self.withProxy { gateway, upstream in
            let cookies = try await Self.signedIn(gateway)
            let relative = try await gateway.get("/apps/echo/redirect?to=%2Fecho%2Fy", cookies: cookies)
            #expect(relative.status == 302 && relative.location == "/apps/echo/echo/y")
            let absolute = try await gateway.get("/apps/echo/redirect?to=" + FormEncoding.escape(upstream.origin + "/echo/z?a=1"), cookies: cookies)
            #expect(absolute.location == "/apps/echo/echo/z?a=1")
            for hostile in [
                "https://evil.example/", "//evil.example/x", "http://127.0.0.1:1/", "https://127.0.0.1.evil.example/", "javascript:alert(1)",
            ] {
                let reply = try await gateway.get("/apps/echo/redirect?to=" + FormEncoding.escape(hostile), cookies: cookies)
                #expect(reply.status == 403, "\(hostile)")
                #expect(reply.location == nil)
                #expect(reply.body.contains("This link leads outside your organization&#39;s apps"))
            }
            #expect(gateway.servedByDataPlane("echo") == 7)
            // The page names where the app tried to send the member (the host only, never the rest of the way).
            let named = try await gateway.get(
                "/apps/echo/redirect?to=" + FormEncoding.escape("https://evil.example/steal?code=123"), cookies: cookies)
            #expect(named.body.contains("send you on to evil.example") && !named.body.contains("code=123"))
        }
    }

    @Test func theBarIsInjectedIntoDocumentsOnlyUnderANonce() async throws {
        try await Self.withProxy { gateway, _ in
            let cookies = try await Self.signedIn(gateway)
            let document = [("Sec-Fetch-Dest", "document"), ("Accept", "text/html")]
            let doc = FormEncoding.escape("<!doctype html><HTML><BODY class=\"a>b\"><!-- <body> --><p id=\"x\">hi</p></BODY></HTML>")
            let page = try await gateway.get("/apps/echo/html?chunk=1&doc=\(doc)", cookies: cookies, headers: document)
            #expect(page.status == 200)
            #expect(page.body.contains("<BODY class=\"a>b\"><style id=\"gatehouse-bar-space\""))
            #expect(page.body.contains("<gatehouse-bar id=\"gatehouse-bar\" data-place=\"auto\"><template shadowrootmode=\"open\">"))
            #expect(page.body.contains("Add Signal Features"))
            let nonce = try #require(page.body.firstMatch(of: /nonce="([^"]+)"/)?.1)
            // One nonce for the URL shim, the page's two styles, the shadow root's stylesheet and the four scripts (the
            // bar's keeper not deferred, right after the bar), and fresh per response.
            #expect(page.body.matches(of: /nonce="([^"]+)"/).map { String($0.1) } == Array(repeating: String(nonce), count: 8))
            #expect(page.body.contains(#"</template></gatehouse-bar><script src="/static/gatehouse-bar-keeper."#))
            let again = try await gateway.get("/apps/echo/html?chunk=1&doc=\(doc)", cookies: cookies, headers: document)
            #expect(again.body.firstMatch(of: /nonce="([^"]+)"/)?.1 != nonce)
            let csp = try #require(page.headers.first(name: "Content-Security-Policy"))
            // The app sends no policy: the gateway's leaves its inline scripts alone (no nonce to switch them off), and
            // the nonce on the bar's tags is only for an app's own policy to let the bar in.
            #expect(!csp.contains("'nonce-") && csp.contains("'unsafe-inline'"))
            #expect(page.headers["Content-Security-Policy"].count == 1)

            let fetch = try await gateway.get("/apps/echo/html", cookies: cookies, headers: [("Sec-Fetch-Dest", "empty")])
            #expect(!fetch.body.contains("gatehouse-bar"))
            let download = try await gateway.get("/apps/echo/html?attachment=1", cookies: cookies, headers: document)
            #expect(!download.body.contains("gatehouse-bar"))

            // The upstream's own policy is enforced too, in the same header.
            let strict = try await gateway.get(
                "/apps/echo/html?csp=" + FormEncoding.escape("script-src 'none'; frame-ancestors 'none'"), cookies: cookies, headers: document)
            let combined = try #require(strict.headers.first(name: "Content-Security-Policy"))
            #expect(combined.contains(", script-src 'nonce-") && combined.contains("frame-ancestors 'none'"))
            #expect(gateway.servedByDataPlane("echo") == 5)
        }
    }

    @Test func gzipBodiesAreInflatedForInjectionCompressedAgainAndNeverOverAdvertised() async throws {
        try await Self.withProxy { gateway, _ in
            let cookies = try await Self.signedIn(gateway)
            let page = try await gateway.get(
                "/apps/echo/gzip", cookies: cookies, headers: [("Sec-Fetch-Dest", "document"), ("Accept-Encoding", "gzip, br, zstd")])
            #expect(page.status == 200)
            // Rewritten, then gzipped again for a browser that takes it (and caches told it depends on that).
            #expect(page.headers.first(name: "Content-Encoding") == "gzip")
            #expect(page.headers["Vary"].joined(separator: ",").lowercased().contains("accept-encoding"))
            #expect(page.wireBytes * 4 < page.body.utf8.count, "\(page.wireBytes) of \(page.body.utf8.count)")
            #expect(page.body.contains("<body class=\"z\"><style id=\"gatehouse-bar-space\""))
            #expect(page.body.contains("compressible compressible"))
            let echoed = try Self.report(
                try await gateway.get("/apps/echo/echo/", cookies: cookies, headers: [("Accept-Encoding", "gzip, br, zstd;q=1")]))
            #expect(echoed.headers["accept-encoding"] == ["gzip"])
            #expect(gateway.servedByDataPlane("echo") == 2)
        }
    }

    @Test func rewrittenPagesGoGzippedOnlyToBrowsersThatTakeIt() async throws {
        let document = String(repeating: EchoUpstream.line, count: 300)
        let path = "/apps/echo/html?chunk=1000&lines=300"
        try await Self.withProxy { gateway, _ in
            let cookies = try await Self.signedIn(gateway)
            for (accept, gzipped) in [
                ("gzip, deflate, br", true), ("br;q=1, *;q=0.5", true), ("gzip;q=0, deflate", false), ("identity", false), ("", false),
            ] {
                let headers = [("Sec-Fetch-Dest", "document")] + (accept.isEmpty ? [] : [("Accept-Encoding", accept)])
                let page = try await gateway.get(path, cookies: cookies, headers: headers)
                #expect(page.headers.first(name: "Content-Encoding") == (gzipped ? "gzip" : nil), "\(accept)")
                #expect(page.headers["Vary"].joined().lowercased().contains("accept-encoding"), "\(accept)")
                // The page arrived in pieces and was flushed piece by piece: whole, with the bar, and smaller.
                #expect(page.body.contains(document) && page.body.contains("<gatehouse-bar"), "\(accept)")
                #expect(gzipped ? page.wireBytes * 3 < page.body.utf8.count : page.wireBytes == page.body.utf8.count, "\(accept)")
            }
            // Arriving 7 bytes at a time, it is still whole, and exactly the page (the padding is in the gzip header,
            // not in the document): the same page's compressed size varies (BREACH).
            var sizes: Set<Int> = []
            for _ in 0..<8 {
                let tiny = try await gateway.get(
                    "/apps/echo/html?chunk=7&lines=300", cookies: cookies, headers: [("Sec-Fetch-Dest", "document"), ("Accept-Encoding", "gzip")])
                #expect(tiny.headers.first(name: "Content-Encoding") == "gzip" && tiny.body.hasSuffix(document + "</body></html>"))
                sizes.insert(tiny.wireBytes)
            }
            #expect(sizes.count > 1, "\(sizes)")
            // A fragment an app's script fetches (a framework's template) comes out byte for byte as the app sent it,
            // compressed or not: nothing added around its one root element.
            let template = #"<div class="panel" ng-if="ready"><h2>{{title}}</h2><p>text</p></div>"#
            for accept in ["gzip", "identity"] {
                for fetch in [[("Sec-Fetch-Dest", "empty"), ("Sec-Fetch-Mode", "cors")], [("Accept", "text/html"), ("X-Requested-With", "XMLHttpRequest")]] {
                    let fragment = try await gateway.get(
                        "/apps/echo/html?chunk=5&doc=" + template.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!, cookies: cookies,
                        headers: fetch + [("Accept-Encoding", accept)])
                    #expect(fragment.body == template, "\(accept) \(fetch)")
                    #expect(fragment.headers.first(name: "Content-Encoding") == (accept == "gzip" ? "gzip" : nil))
                }
            }
            // What is not rewritten goes as the app sent it: a fetch's JSON, a download.
            let json = try await gateway.get("/apps/echo/echo/", cookies: cookies, headers: [("Accept-Encoding", "gzip")])
            #expect(json.headers.first(name: "Content-Encoding") == nil)
            #expect(gateway.servedByDataPlane("echo") == 18)
        }
        try await Self.withProxy(configure: { $0.proxy.compressPages = false }) { gateway, _ in
            let cookies = try await Self.signedIn(gateway)
            let page = try await gateway.get(path, cookies: cookies, headers: [("Sec-Fetch-Dest", "document"), ("Accept-Encoding", "gzip")])
            #expect(page.headers.first(name: "Content-Encoding") == nil && page.headers["Vary"].isEmpty)
            #expect(page.body.contains(document))
        }
    }

    @Test func registeredMembersGetNoBanner() async throws {
        try await Self.withProxy { gateway, _ in
            let cookies = try await Self.signedIn(gateway)
            // Alice is `sso`; the chat app needs `registered`, the admin app a role she lacks.
            let chat = try await gateway.get("/apps/chat/", cookies: cookies)
            #expect(chat.status == 403 && chat.body.contains("features are not set up for you yet"))
            let admin = try await gateway.get("/apps/admin/echo/", cookies: cookies)
            // The refusal names what she lacks.
            #expect(admin.status == 403 && admin.body.contains("This app is not available to you") && admin.body.contains("It needs the role admin,"))
            let unknown = try await gateway.get("/apps/nope/", cookies: cookies)
            #expect(unknown.status == 404)
        }
    }

    @Test func failingUpstreamsGiveErrorPagesNotHangs() async throws {
        try await Self.withProxy(configure: { $0.proxy.readTimeoutSeconds = 1 }) { gateway, _ in
            let cookies = try await Self.signedIn(gateway)
            // A refused connection fails at once, not after the 5-second connect timeout.
            let started = ContinuousClock.now
            let down = try await gateway.get("/apps/down/", cookies: cookies)
            #expect(down.status == 502 && down.body.contains("The app cannot be reached"))
            // Every member whose page fails gets the toast as well, on the page (no bar can be injected into it).
            #expect(down.body.contains("<template id=\"pending-toast\">Failed to load web application</template>"))
            #expect(ContinuousClock.now - started < .seconds(3))
            // A slow app is told apart from a dead one.
            let slow = try await gateway.get("/apps/echo/slow", cookies: cookies)
            #expect(slow.status == 504 && slow.body.contains("The app is slow to answer") && slow.body.contains("Failed to load web application"))
            _ = try? await gateway.get("/apps/echo/reset", cookies: cookies)
            // The gateway is still fine afterwards.
            #expect(try await gateway.get("/apps/echo/echo/", cookies: cookies).status == 200)
            #expect(gateway.servedByDataPlane("down") == 1 && gateway.servedByDataPlane("echo") == 3)
        }
    }

    /// The app's time to answer counts from the end of the upload: a member on a slow line is not an app that is slow,
    /// and an app that is slow after the upload still gets its 504.
    @Test func aSlowUploadIsNotASlowApp() async throws {
        try await Self.withProxy(configure: { $0.proxy.readTimeoutSeconds = 1 }) { gateway, _ in
            let cookies = try await Self.signedIn(gateway)
            let cookie = cookies.map { "\($0)=\($1)" }.joined(separator: "; ")
            let socket = try RawSocket(port: gateway.port)
            defer { socket.close() }
            socket.send(
                "POST /apps/echo/echo/upload HTTP/1.1\r\nHost: 127.0.0.1:\(gateway.port)\r\nCookie: \(cookie)\r\n"
                    + "Content-Type: text/plain\r\nContent-Length: 6\r\nConnection: close\r\n\r\n")
            for byte in "upload" {  // 2.4 s for six bytes: more than twice the app's time to answer
                try await Task.sleep(for: .milliseconds(400))
                socket.send(String(byte))
            }
            let outcome = await socket.readUntilClosed(timeout: .seconds(5))
            #expect(outcome.status == 200, "\(outcome.text.prefix(80))")

            let started = ContinuousClock.now
            let slow = try await gateway.send(.POST, "/apps/echo/slow-answer", cookies: cookies, headers: [], body: "x")
            #expect(slow.status == 504 && slow.body.contains("The app is slow to answer"))
            #expect(ContinuousClock.now - started < .seconds(5))
        }
    }

    /// Forms and documents sent with a length are the data plane's, with the same origin checks as the application's
    /// path (a cross-site form is refused there, with its page); a body of no stated length stays the application's.
    @Test func formsWithALengthAreTheDataPlanesAndCrossSiteOnesAreRefused() async throws {
        try await Self.withProxy { gateway, _ in
            let cookies = try await Self.signedIn(gateway)
            let form = [("Content-Type", "application/x-www-form-urlencoded"), ("Sec-Fetch-Site", "same-origin")]
            let posted = try await gateway.send(.POST, "/apps/echo/echo/form", cookies: cookies, headers: form, body: "a=1&b=2")
            #expect(try posted.status == 200 && Self.report(posted).bodyBytes == 7)
            let put = try await gateway.send(
                .PUT, "/apps/echo/echo/doc", cookies: cookies, headers: [("Content-Type", "application/json"), ("Sec-Fetch-Site", "same-origin")],
                body: "{\"x\":1}")
            #expect(try put.status == 200 && Self.report(put).bodyBytes == 7)
            #expect(gateway.servedByDataPlane("echo") == 2)

            let crossSite = try await gateway.send(
                .POST, "/apps/echo/echo/form", cookies: cookies, headers: [("Sec-Fetch-Site", "cross-site")], body: "a=1")
            #expect(crossSite.status == 403)
            let cookie = cookies.map { "\($0)=\($1)" }.joined(separator: "; ")
            let chunked = try await RawSocket.exchange(
                port: gateway.port,
                Array(
                    ("POST /apps/echo/echo/form HTTP/1.1\r\nHost: 127.0.0.1:\(gateway.port)\r\nCookie: \(cookie)\r\n"
                        + "Sec-Fetch-Site: same-origin\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n3\r\na=1\r\n0\r\n\r\n").utf8))
            #expect(chunked.status == 200 && chunked.text.contains("\"bodyBytes\":3"), "\(chunked.text.suffix(200))")
            #expect(gateway.servedByDataPlane("echo") == 2)
        }
    }

    @Test func uploadsStreamAndAnEarlyAnswerDoesNotCrash() async throws {
        try await Self.withProxy(configure: { $0.proxy.maximumRequestBodyBytes = 4 << 20 }) { gateway, _ in
            let cookies = try await Self.signedIn(gateway)
            let upload = String(repeating: "u", count: 3 << 20)
            let echoed = try await gateway.send(.POST, "/apps/echo/echo/upload", cookies: cookies, headers: [], body: upload)
            #expect(try Self.report(echoed).bodyBytes == 3 << 20)
            // An answer before the upload is read may come with the connection closed under the client's feet (both
            // are proper HTTP); what matters is the answer when it arrives, and that the gateway lives on.
            if let early = try? await gateway.send(.POST, "/apps/echo/early", cookies: cookies, headers: [], body: upload) {
                #expect(early.status == 200)
            }
            if let tooBig = try? await gateway.send(.POST, "/apps/echo/echo/upload", cookies: cookies, headers: [], body: upload + upload) {
                #expect(tooBig.status == 413)
            }
            let streamedTooBig = try? await gateway.send(
                .POST, "/apps/echo/echo/upload", cookies: cookies, headers: [("Transfer-Encoding", "chunked")], body: upload + upload)
            #expect(streamedTooBig == nil || streamedTooBig?.status == 413 || streamedTooBig?.status == 502)
            #expect(try await gateway.get("/apps/echo/echo/", cookies: cookies).status == 200)
        }
    }

    /// An app that answers an upload of no stated length (the application's path) before reading it: the member
    /// gets its answer, whole, though the upload was still under way, and the gateway stops reading the rest.
    @Test func anAnswerBeforeAChunkedUploadEndsReachesTheMember() async throws {
        try await Self.withProxy { gateway, _ in
            let cookie = try await Self.signedIn(gateway).map { "\($0)=\($1)" }.joined(separator: "; ")
            let socket = try RawSocket(port: gateway.port)
            defer { socket.close() }
            socket.send(
                "POST /apps/echo/early HTTP/1.1\r\nHost: 127.0.0.1:\(gateway.port)\r\nCookie: \(cookie)\r\nSec-Fetch-Site: same-origin\r\n"
                    + "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\nfirst\r\n")
            // The rest of the upload never comes while the answer is awaited.
            let answer = await socket.readUntilClosed(timeout: .seconds(3))
            #expect(answer.status == 200 && answer.text.hasSuffix("answered before reading"), "\(answer.text.suffix(300))")
            #expect(gateway.servedByDataPlane("echo") == 0)
        }
    }

    @Test func aHundredMegabytePageStreamsThroughTheInjector() async throws {
        try await Self.withProxy { gateway, _ in
            let cookies = try await Self.signedIn(gateway)
            let reply = try await gateway.get("/apps/echo/big?mb=100", cookies: cookies, headers: [("Sec-Fetch-Dest", "document")], limit: 120 << 20)
            #expect(reply.status == 200)
            #expect(reply.body.utf8.count > 100 << 20)
            #expect(reply.body.prefix(1024).contains(/^<html><script src="[^"]+" [^>]+><\/script><body><style id="gatehouse-bar-space"/))
            #expect(reply.body.hasSuffix("</body></html>"))
            #expect(gateway.servedByDataPlane("echo") == 1)
        }
    }

    /// Opens a WebSocket through the gateway and collects what comes back until it closes or `until` is satisfied.
    static func webSocket(
        _ gateway: LiveGateway, cookies: [String: String], app: String = "echo", path: String = "ws", extraOrigin: String? = nil,
        send messages: [String], wait: Duration = .seconds(0), received: Box = Box()
    ) async throws -> [String] {
        // The client sends `Origin: ws://<gateway host>` itself; an extra one plays a page of another site.
        var headers = HTTPFields()
        headers[.cookie] = cookies.map { "\($0)=\($1)" }.joined(separator: "; ")
        if let extraOrigin { headers[.origin] = extraOrigin }
        let secure = gateway.configuration.listen.tls
        let url = secure == nil ? "ws://127.0.0.1:\(gateway.port)/apps/\(app)/\(path)" : "wss://localhost:\(gateway.port)/apps/\(app)/\(path)"
        struct NoEnd: Error {}
        // A socket that never ends fails the test instead of holding the run.
        let sent = headers
        _ = try await withTimeout(.seconds(30), { try await Self.webSocketSession(url, sent, secure, messages, wait, received) }) { NoEnd() }
        return await received.values
    }

    static func webSocketSession(
        _ url: String, _ headers: HTTPFields, _ secure: ListenTLSConfiguration?, _ messages: [String], _ wait: Duration, _ received: Box
    ) async throws {
        try await WebSocketClient.connect(
            url: url,
            configuration: .init(additionalHeaders: headers),
            tlsConfiguration: try secure.map { tls in
                var trusting = TLSConfiguration.makeClientConfiguration()
                trusting.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(tls.certificateFile))
                return trusting
            },
            logger: Logger(label: "ws-test")
        ) { inbound, outbound, _ in
            for message in messages { try await outbound.write(.text(message)) }
            var iterator = inbound.messages(maxSize: 1 << 16).makeAsyncIterator()
            for _ in 0..<(messages.count + 1) {
                guard case .text(let text)? = try await iterator.next() else { break }
                await received.append(text)
            }
            if wait > .zero {
                // Keep reading: the gateway closes the connection when the session ends.
                while try await iterator.next() != nil {}
                await received.append("(closed)")
            }
        }
    }

    actor Box {
        var values: [String] = []
        func append(_ value: String) { values.append(value) }
    }

    /// A graceful shutdown closes relayed WebSockets as "going away" (1001), so that pages reconnect elsewhere.
    @Test func aShutdownClosesWebSocketsAsGoingAway() async throws {
        try await Self.withProxy { gateway, _ in
            let cookies = try await Self.signedIn(gateway)
            var headers = HTTPFields()
            headers[.cookie] = cookies.map { "\($0)=\($1)" }.joined(separator: "; ")
            let close = try await WebSocketClient.connect(
                url: "ws://127.0.0.1:\(gateway.port)/apps/echo/ws", configuration: .init(additionalHeaders: headers),
                logger: Logger(label: "ws-test")
            ) { inbound, outbound, _ in
                try await outbound.write(.text("hello"))
                var iterator = inbound.messages(maxSize: 1 << 16).makeAsyncIterator()
                _ = try await iterator.next()  // the echo's report
                _ = try await iterator.next()  // "echo: hello": the relay runs
                await gateway.beginShutdown()
                while try await iterator.next() != nil {}
            }
            #expect(close?.closeCode == .goingAway)
        }
    }

    @Test func webSocketsAreRelayedWithTheJarAndIdentity() async throws {
        try await Self.withProxy { gateway, upstream in
            let cookies = try await Self.signedIn(gateway)
            _ = try await gateway.get("/apps/echo/set-cookie?c=app%3D1%3B%20Path%3D%2F", cookies: cookies)
            let messages = try await Self.webSocket(gateway, cookies: cookies, send: ["hello"])
            #expect(messages == ["user=\(DevelopmentAccounts.all[0].sub) cookie=app=1 host=127.0.0.1:\(upstream.port)", "echo: hello"])

            // From another site's page the browser would send its own Origin: no upgrade.
            await #expect(throws: (any Error).self) {
                _ = try await Self.webSocket(gateway, cookies: cookies, extraOrigin: "https://evil.example", send: ["hi"])
            }
            // An app that refuses the upgrade: the browser's is refused too (the plain request's answer).
            await #expect(throws: (any Error).self) {
                _ = try await Self.webSocket(gateway, cookies: cookies, path: "echo", send: ["hi"])
            }
            // Without a session: no upgrade either.
            await #expect(throws: (any Error).self) {
                _ = try await Self.webSocket(gateway, cookies: [:], send: ["hi"])
            }
        }
    }

    @Test func aWebSocketClosesWhenTheSessionEnds() async throws {
        try await Self.withProxy { gateway, _ in
            let cookies = try await Self.signedIn(gateway)
            let portal = try await gateway.get("/", cookies: cookies)
            let csrf = try #require(portal.body.firstMatch(of: /name="csrf" value="([^"]+)"/)?.1)
            async let messages = Self.webSocket(gateway, cookies: cookies, send: ["hello"], wait: .seconds(1))
            try await Task.sleep(for: .milliseconds(500))
            _ = try await gateway.post("/signout", form: [("csrf", String(csrf))], cookies: cookies)
            let started = ContinuousClock.now
            #expect(try await messages.last == "(closed)")
            #expect(ContinuousClock.now - started < .seconds(10))
        }
    }
}
