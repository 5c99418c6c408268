import AsyncHTTPClient
import Foundation
import GatehouseCore
import NIOHTTP1
import Testing

@testable import Gatehouse

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// What third-party apps expect of a proxy in front of them (docs/apps.md "Real apps"): their own origin in `Origin`
/// and `Referer`, their CSRF cookie readable by their scripts, style sheets and XHTML pages rewritten, a policy they
/// can run under, `HEAD` answered; and the gateway's own checks before any of it. Over real sockets, with the echo
/// upstream saying what it received.
@Suite(.serialized) struct AppCompatibilityTests {
    static func respond(_ headers: [String] = [], type: String = "text/html; charset=utf-8", body: String? = nil, app: String = "echo") -> String {
        var pairs = headers.map { ("h", $0) } + [("type", type)]
        if let body { pairs.append(("body", body)) }
        return FormEncoding.url("/apps/\(app)/respond", adding: pairs)
    }

    @Test func theAppSeesItsOwnOriginAndPages() async throws {
        try await ProxyTests.withProxy { gateway, upstream in
            let cookies = try await ProxyTests.signedIn(gateway)
            let fromPage = [("Origin", gateway.origin), ("Referer", gateway.origin + "/apps/echo/admin/login/?next=/admin/")]
            let posted = try await gateway.send(.POST, "/apps/echo/echo/login", cookies: cookies, headers: fromPage, body: "a=1")
            #expect(posted.status == 200)
            let received = try ProxyTests.report(posted)
            #expect(received.headers["origin"] == [upstream.origin])
            #expect(received.headers["referer"] == [upstream.origin + "/admin/login/?next=/admin/"])
            // Another app's page on the same origin: that app's upstream (its base path `/echo/`), as the app would see it.
            let fromOther = [("Origin", gateway.origin), ("Referer", gateway.origin + "/apps/other/list")]
            let across = try ProxyTests.report(try await gateway.send(.POST, "/apps/echo/echo/x", cookies: cookies, headers: fromOther, body: ""))
            #expect(across.headers["origin"] == [upstream.origin] && across.headers["referer"] == [upstream.origin + "/echo/list"])
            // The gateway's own pages are none of the app's business; another site's page stays what it is.
            let portal = try ProxyTests.report(
                try await gateway.get("/apps/echo/echo/y", cookies: cookies, headers: [("Referer", gateway.origin + "/")]))
            #expect(portal.headers["referer"] == nil)
            let outside = try ProxyTests.report(
                try await gateway.get(
                    "/apps/echo/echo/z", cookies: cookies, headers: [("Referer", "https://news.example/item"), ("Origin", "https://news.example")]))
            #expect(outside.headers["referer"] == ["https://news.example/item"] && outside.headers["origin"] == ["https://news.example"])
        }
    }

    /// Since the app now sees its own origin, the gateway refuses what changes something from anywhere else first.
    @Test(arguments: [
        [("Origin", "https://evil.example")], [("Origin", "null")], [("Origin", "http://127.0.0.1")], [("Origin", "http://127.0.0.1.evil.example")],
        [("Sec-Fetch-Site", "cross-site")], [("Origin", "https://evil.example"), ("Referer", "PLACEHOLDER/apps/echo/")],
    ])
    func requestsThatChangeSomethingFromAnotherOriginAreRefused(headers: [(String, String)]) async throws {
        try await ProxyTests.withProxy { gateway, upstream in
            let cookies = try await ProxyTests.signedIn(gateway)
            let hostile = headers.map { ($0.0, $0.1.replacingOccurrences(of: "PLACEHOLDER", with: gateway.origin)) }
            for method in [HTTPMethod.POST, .PUT, .DELETE, .PATCH] {
                let reply = try await gateway.send(
                    method, "/apps/echo/echo/delete", cookies: cookies, headers: hostile + [("Accept", "application/json")], body: "")
                #expect(reply.status == 403 && reply.body.contains("\"error\""), "\(method) \(hostile)")
            }
            // Reading is not changing: a foreign page's `GET` goes on (cross-site, it carries no session to begin with).
            #expect(try await gateway.get("/apps/echo/echo/read", cookies: cookies, headers: hostile).status == 200)
            #expect(upstream.port > 0)
        }
    }

    @Test func aFormWithoutOriginFromTheSameSiteGoesThrough() async throws {
        try await ProxyTests.withProxy { gateway, _ in
            let cookies = try await ProxyTests.signedIn(gateway)
            let reply = try await gateway.send(
                .POST, "/apps/echo/echo/old-browser", cookies: cookies, headers: [("Sec-Fetch-Site", "same-origin")], body: "")
            #expect(reply.status == 200)
        }
    }

    /// `_xsrf` copied to the browser on the mount's path, following the jar; an `HttpOnly` cookie and names not listed
    /// never; the browser's copy never reaches the app.
    @Test func clientCookiesFollowTheJar() async throws {
        try await ProxyTests.withProxy(configure: { configuration in
            configuration.apps[0].clientCookies = ["_xsrf", "csrftoken"]
        }) { gateway, _ in
            var cookies = try await ProxyTests.signedIn(gateway)
            let set = try await gateway.get(
                Self.respond([
                    "Set-Cookie: _xsrf=2|abc; Path=/", "Set-Cookie: sessionid=s3cret; Path=/; HttpOnly", "Set-Cookie: csrftoken=t1; Path=/; HttpOnly",
                ]),
                cookies: cookies)
            #expect(set.setCookies == ["_xsrf=2|abc; Path=/apps/echo/; SameSite=Lax"])
            cookies["_xsrf"] = "2|abc"
            let same = try await gateway.get(Self.respond(), cookies: cookies)
            #expect(same.setCookies.isEmpty)
            let received = try ProxyTests.report(try await gateway.get("/apps/echo/echo/x", cookies: cookies))
            #expect(
                received.headers["cookie"]?.first?.contains("_xsrf=2|abc") == true && received.headers["cookie"]?.first?.contains("sessionid") == true
            )
            #expect(received.headers["cookie"]?.count == 1)
            // The app replaces it, then ends it: the copy follows, and a copy the browser made up is taken back.
            let changed = try await gateway.get(Self.respond(["Set-Cookie: _xsrf=2|def; Path=/"]), cookies: cookies)
            #expect(changed.setCookies == ["_xsrf=2|def; Path=/apps/echo/; SameSite=Lax"])
            cookies["_xsrf"] = "2|def"
            let ended = try await gateway.get(Self.respond(["Set-Cookie: _xsrf=; Path=/; Max-Age=0"]), cookies: cookies)
            #expect(ended.setCookies == ["_xsrf=; Path=/apps/echo/; SameSite=Lax; Max-Age=0"])
            cookies["csrftoken"] = "forged"
            #expect(
                try await gateway.get(Self.respond(), cookies: cookies).setCookies.contains("csrftoken=; Path=/apps/echo/; SameSite=Lax; Max-Age=0"))

            // A page the application's path answers (a form of no stated length) carries the copy too.
            let cookie = cookies.map { "\($0)=\($1)" }.joined(separator: "; ")
            let target = Self.respond(["Set-Cookie: _xsrf=2|ghi; Path=/"])
            let page = try await RawSocket.exchange(
                port: gateway.port,
                Array(
                    ("POST \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(gateway.port)\r\nCookie: \(cookie)\r\nSec-Fetch-Site: same-origin\r\n"
                        + "Sec-Fetch-Dest: document\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n1\r\nx\r\n0\r\n\r\n").utf8),
                // The connection closes after the answer; a busy machine (a full parallel run) may take more than the
                // default 3 s to give it.
                timeout: .seconds(30))
            #expect(page.status == 200 && page.text.contains("<gatehouse-bar"), "\(page.text.prefix(300))")
            #expect(page.text.lowercased().contains("set-cookie: _xsrf=2|ghi; path=/apps/echo/; samesite=lax\r\n"))
        }
    }

    @Test func headIsGetWithoutTheBody() async throws {
        try await ProxyTests.withProxy { gateway, _ in
            for path in ["/healthz", "/signin", "/"] {
                let get = try await gateway.send(.GET, path, cookies: [:], headers: [], body: nil)
                let head = try await gateway.send(.HEAD, path, cookies: [:], headers: [], body: nil)
                #expect(head.status == get.status && head.body.isEmpty, "\(path)")
                #expect(head.headers.first(name: "Content-Type") == get.headers.first(name: "Content-Type"), "\(path)")
            }
            #expect(try await gateway.send(.HEAD, "/no-such-page", cookies: [:], headers: [], body: nil).status == 404)
        }
    }

    /// A URL a script built at the gateway's root, asked from a page of an app not told its mount, goes on there.
    @Test func strayRootPathsOfAnAppsPageGoToItsMount() async throws {
        try await ProxyTests.withProxy { gateway, _ in
            let cookies = try await ProxyTests.signedIn(gateway)
            let stray = try await gateway.get("/api/kernels?x=1", cookies: cookies, headers: [("Referer", gateway.origin + "/apps/echo/lab")])
            #expect(stray.status == 307 && stray.location == "/apps/echo/api/kernels?x=1")
            for (path, referer) in [
                ("/api/kernels", nil), ("/api/kernels", "https://evil.example/apps/echo/"), ("/api/kernels", gateway.origin + "/"),
                ("/static/x.js", gateway.origin + "/apps/echo/"), ("/apps/nope/x", gateway.origin + "/apps/echo/"),
            ] {
                let reply = try await gateway.get(path, cookies: cookies, headers: referer.map { [("Referer", $0)] } ?? [])
                #expect(reply.status == 404, "\(path) from \(referer ?? "nowhere")")
            }
        }
    }

    @Test func styleSheetsOnAPathMountAreRewritten() async throws {
        try await ProxyTests.withProxy { gateway, upstream in
            let cookies = try await ProxyTests.signedIn(gateway)
            let css = "@import \"/base.css\"; a{background:url(/img/x.png)} b{background:url(\(upstream.origin)/y.png)} c{background:url(z.png)}"
            let reply = try await gateway.get(Self.respond(type: "text/css", body: css), cookies: cookies, headers: [("Accept-Encoding", "identity")])
            #expect(
                reply.body
                    == "@import \"/apps/echo/base.css\"; a{background:url(/apps/echo/img/x.png)} b{background:url(/apps/echo/y.png)} c{background:url(z.png)}"
            )
        }
    }

    @Test func xhtmlPagesGetTheBarAndStayWellFormed() async throws {
        try await ProxyTests.withProxy { gateway, _ in
            let cookies = try await ProxyTests.signedIn(gateway)
            let page = """
                <?xml version="1.0" encoding="utf-8"?><html xmlns="http://www.w3.org/1999/xhtml"><head><title>t</title></head>\
                <body><p><a href="/summary">summary</a></p></body></html>
                """
            let reply = try await gateway.get(
                Self.respond(type: "application/xhtml+xml; charset=utf-8", body: page), cookies: cookies, headers: ProxyHardeningTests.document)
            #expect(reply.body.contains("<gatehouse-bar") && reply.body.contains("href=\"/apps/echo/summary\""))
            let parser = XMLParser(data: Data(reply.body.utf8))
            #expect(parser.parse(), "\(parser.parserError.map { "\($0)" } ?? "")")
        }
    }

    /// An app without a policy runs its inline scripts: no nonce in the gateway's policy. `app` leaves the app's own
    /// alone; a policy of the operator's stands in for the gateway's.
    @Test func eachAppsPolicyMode() async throws {
        try await ProxyTests.withProxy(configure: { configuration in
            let upstream = configuration.apps[0].upstream
            configuration.apps += [
                AppConfiguration(slug: "own", name: "Own", upstream: upstream, contentSecurityPolicy: .app),
                AppConfiguration(slug: "custom", name: "Custom", upstream: upstream, contentSecurityPolicy: .custom("default-src 'self'; img-src *")),
            ]
        }) { gateway, _ in
            let cookies = try await ProxyTests.signedIn(gateway)
            let merged = try await gateway.get(Self.respond(), cookies: cookies, headers: ProxyHardeningTests.document)
            let policy = try #require(merged.headers.first(name: "Content-Security-Policy"))
            #expect(policy.contains("'unsafe-inline'") && !policy.contains("nonce-") && policy.contains("frame-ancestors 'self'"))
            let appsOwn = try await gateway.get(Self.respond(app: "own"), cookies: cookies, headers: ProxyHardeningTests.document)
            #expect(appsOwn.headers["Content-Security-Policy"] == ["frame-ancestors 'self'"] && appsOwn.body.contains("<gatehouse-bar"))
            let withItsOwn = try await gateway.get(
                Self.respond(["Content-Security-Policy: script-src 'self'"], app: "own"), cookies: cookies, headers: ProxyHardeningTests.document)
            #expect(withItsOwn.headers["Content-Security-Policy"].first?.hasPrefix("script-src 'self' 'nonce-") == true)
            let custom = try await gateway.get(Self.respond(app: "custom"), cookies: cookies, headers: ProxyHardeningTests.document)
            #expect(
                custom.headers.first(name: "Content-Security-Policy")?.hasPrefix("default-src 'self'; img-src *; script-src 'self' 'nonce-") == true)
        }
    }
}

/// The mapping itself, with the spellings a hostile page or client could try: only a page of a mounted app, named
/// exactly, becomes that app's upstream URL.
@Suite struct OriginMappingTests {
    static let gateway = "https://gate.example.org"
    static let mapping = OriginMapping(
        catalog: AppCatalog(
            apps: [
                AppConfiguration(slug: "wiki", name: "Wiki", upstream: URL(string: "https://wiki.internal/base/")!),
                AppConfiguration(slug: "wiki-admin", name: "Admin", upstream: URL(string: "http://10.0.0.5:8080/")!),
                AppConfiguration(slug: "grafana", name: "Grafana", upstream: URL(string: "http://grafana.internal:3000/")!, mount: .host),
            ], publicOrigin: gateway, appsDomain: AppsDomain(domain: "apps.example.org", publicURL: URL(string: gateway)!)),
        publicOrigin: gateway)

    @Test(
        arguments: [
            ("\(gateway)/apps/wiki/page?x=1", "https://wiki.internal/base/page?x=1"),
            ("\(gateway)/apps/wiki", "https://wiki.internal/base/"),
            ("\(gateway)/apps/wiki-admin/users", "http://10.0.0.5:8080/users"),
            ("https://grafana.apps.example.org/d/1", "http://grafana.internal:3000/d/1"),
            ("\(gateway)/apps/wikix/page", nil), ("\(gateway)/", nil), ("\(gateway).evil.example/apps/wiki/x", nil),
            ("https://evil.example/apps/wiki/x", nil), ("http://gate.example.org/apps/wiki/x", nil), ("\(gateway)@evil.example/apps/wiki/", nil),
        ] as [(String, String?)])
    func pagesOfMountedAppsOnly(page: String, upstream: String?) {
        #expect(Self.mapping.upstream(ofPage: page)?.url == upstream)
    }

    @Test func originsFollowThePageTheRequestCameFrom() {
        let mapping = Self.mapping
        // A form of the wiki's to the wiki; of the admin app's to the wiki (the app sees a cross-origin request, as it is).
        #expect(mapping.map(origin: Self.gateway, referer: Self.gateway + "/apps/wiki/edit", to: "wiki").origin == "https://wiki.internal")
        #expect(mapping.map(origin: Self.gateway, referer: Self.gateway + "/apps/wiki-admin/", to: "wiki").origin == "http://10.0.0.5:8080")
        #expect(mapping.map(origin: Self.gateway, referer: nil, to: "wiki") == ("https://wiki.internal", nil))
        #expect(mapping.map(origin: "https://grafana.apps.example.org", referer: nil, to: "wiki").origin == "http://grafana.internal:3000")
        #expect(
            mapping.map(origin: "https://evil.example", referer: "https://evil.example/x", to: "wiki") == (
                "https://evil.example", "https://evil.example/x"
            ))
        #expect(mapping.map(origin: nil, referer: Self.gateway + "/open/wiki", to: "wiki") == (nil, nil))
    }

    @Test func onlyTheGatewaysOriginsMayChangeThings() {
        let mapping = Self.mapping
        for origin in [Self.gateway, "https://grafana.apps.example.org"] { #expect(mapping.refusal(origin: origin, fetchSite: nil) == nil) }
        for origin in [
            "null", "https://evil.example", "https://gate.example.org.evil.example", "http://gate.example.org", "https://GATE.example.org",
        ] {
            #expect(mapping.refusal(origin: origin, fetchSite: nil) != nil, "\(origin)")
        }
        #expect(mapping.refusal(origin: nil, fetchSite: "cross-site") != nil)
        #expect(mapping.refusal(origin: nil, fetchSite: "same-site") == nil && mapping.refusal(origin: nil, fetchSite: nil) == nil)
    }
}
