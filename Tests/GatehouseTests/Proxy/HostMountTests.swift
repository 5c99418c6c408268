import Foundation
import GatehouseCore
import Testing

@testable import Gatehouse

/// Host-mounted apps on `<slug>.apps.localhost`, reached on the gateway's loopback listener with a `Host` header.
@Suite(.serialized) struct HostMountTests {
    static func withHostMounts(_ body: (LiveGateway, EchoUpstream) async throws -> Void) async throws {
        try await EchoUpstream.run { upstream in
            try await LiveGateway.run(configure: {
                $0.appsDomain = "apps.localhost"
                $0.apps = [
                    AppConfiguration(
                        slug: "spa", name: "SPA", upstream: URL(string: upstream.origin + "/")!, mount: .host,
                        rules: PathRules([.init(paths: ["/echo/admin/*"], action: .deny)])),
                    AppConfiguration(slug: "other", name: "Other", upstream: URL(string: upstream.origin + "/")!, mount: .host),
                    AppConfiguration(slug: "wiki", name: "Wiki", upstream: URL(string: upstream.origin + "/")!),
                ]
            }) { gateway in try await body(gateway, upstream) }
        }
    }

    static func host(_ slug: String, _ gateway: LiveGateway) -> [(String, String)] {
        [("Host", "\(slug).apps.localhost:\(gateway.port)")]
    }

    /// Steps 1–3 of the handoff for `slug`; returns the grant cookie.
    static func handoff(_ gateway: LiveGateway, slug: String = "spa", session: [String: String], path: String = "/echo/x") async throws -> String {
        let first = try await gateway.get(path, cookies: [:], headers: host(slug, gateway))
        #expect(first.status == 303)
        var appCookies = BrowserCookies()
        appCookies.absorb(first)
        let open = try #require(first.location)
        #expect(open.hasPrefix(gateway.origin + "/apps-open/\(slug)?state="))
        let back = try await gateway.get(open, cookies: session)
        let handoff = try #require(back.location)
        #expect(handoff.hasPrefix("http://\(slug).apps.localhost:\(gateway.port)/__gatehouse/handoff?code="))
        let redeemed = try await gateway.get(
            String(handoff.dropFirst("http://\(slug).apps.localhost:\(gateway.port)".count)), cookies: appCookies.values, headers: host(slug, gateway)
        )
        #expect(redeemed.status == 303 && redeemed.location == path)
        let grant = try #require(redeemed.setCookies.first { $0.hasPrefix("gatehouse_app=") })
        #expect(!grant.contains("Domain="))  // host-only: no other app host gets it
        return String(grant.dropFirst("gatehouse_app=".count).prefix { $0 != ";" })
    }

    /// A request for an app's resource without the session, which no member could follow to a sign-in (a manifest the
    /// browser fetched without cookies, a script's fetch, an image), is not sent to the sign-in, on either mount: a
    /// manifest gets one that names nothing, the rest `401` with JSON; a page the member opens still goes to sign in.
    @Test func anonymousResourcesAreToldNotRedirected() async throws {
        try await Self.withHostMounts { gateway, _ in
            for (path, host) in [("/apps/wiki/manifest.json", [(String, String)]()), ("/manifest.json", Self.host("spa", gateway))] {
                let manifest = try await gateway.get(
                    path, cookies: [:], headers: host + [("Sec-Fetch-Mode", "cors"), ("Sec-Fetch-Dest", "manifest"), ("Sec-Fetch-Site", "same-origin")])
                #expect(manifest.status == 200 && manifest.body == "{}", "\(path)")
                #expect(manifest.headers.first(name: "Content-Type") == "application/manifest+json" && manifest.setCookies.isEmpty)
                for destination in ["empty", "image", "script"] {
                    let fetched = try await gateway.get(
                        path, cookies: [:], headers: host + [("Sec-Fetch-Mode", "no-cors"), ("Sec-Fetch-Dest", destination)])
                    #expect(fetched.status == 401 && fetched.body.contains(#""error":"sign_in_required""#) && fetched.location == nil, "\(path)")
                }
                for navigation in [[("Sec-Fetch-Mode", "navigate"), ("Sec-Fetch-Dest", "document")], []] {
                    #expect(try await gateway.get(path, cookies: [:], headers: host + navigation).status == 303, "\(path)")
                }
            }
        }
    }

    /// One gate for every way into an app: a path-mounted request, a host-mounted request and a WebSocket upgrade
    /// deliver the same forwarding and identity headers upstream.
    @Test func everyWayIntoAnAppDeliversTheSameIdentityHeaders() async throws {
        try await Self.withHostMounts { gateway, _ in
            let session = try await ProxyTests.signedIn(gateway)
            let pathMounted = try ProxyTests.report(try await gateway.get("/apps/wiki/echo/x", cookies: session)).headers
            let grant = try await Self.handoff(gateway, session: session)
            let hostMounted = try ProxyTests.report(
                try await gateway.get("/echo/x", cookies: ["gatehouse_app": grant], headers: Self.host("spa", gateway))
            ).headers
            // The app's rules hold on its own host as on the gateway's.
            for denied in ["/echo/admin/x", "/echo//admin/x", "/echo/%61dmin/x"] {
                let reply = try await gateway.get(
                    denied, cookies: ["gatehouse_app": grant], headers: Self.host("spa", gateway) + [("Accept", "text/html")])
                #expect(reply.status == 403 && reply.body.contains("This part of the app is closed"), "\(denied)")
            }
            // The upstream's first message on `/ws-headers` reports the upgrade request's headers.
            let messages = try await ProxyTests.webSocket(gateway, cookies: session, app: "wiki", path: "ws-headers", send: [])
            let upgrade = try ProxyTests.report(json: try #require(messages.first)).headers
            func gatewayHeaders(_ headers: [String: [String]]) -> [String: [String]] { headers.filter { $0.key.hasPrefix("x-forwarded-") } }
            // Addresses, scheme, host, and who the member is (sub, email, name, groups, …).
            #expect(gatewayHeaders(pathMounted).count >= 5, "\(pathMounted)")
            #expect(gatewayHeaders(pathMounted)["x-forwarded-preferred-username"] == ["alice"])
            // The same but for where the browser is: the app host, or the gateway's host and the mount's prefix.
            func placeless(_ headers: [String: [String]]) -> [String: [String]] {
                gatewayHeaders(headers).filter { $0.key != "x-forwarded-host" && $0.key != "x-forwarded-prefix" }
            }
            #expect(placeless(hostMounted) == placeless(pathMounted))
            #expect(hostMounted["x-forwarded-host"]?.first?.hasPrefix("spa.apps.localhost:") == true && hostMounted["x-forwarded-prefix"] == nil)
            #expect(pathMounted["x-forwarded-prefix"] == ["/apps/wiki"])
            #expect(gatewayHeaders(upgrade) == gatewayHeaders(pathMounted))
        }
    }

    /// The bar on an app host keeps the member's choices through the app host's own origin (its grant names the
    /// session); without a grant nothing is changed and the request goes through the handoff like any other.
    @Test func theBarOnAnAppHostKeepsChoicesForTheWholeSession() async throws {
        try await Self.withHostMounts { gateway, _ in
            let session = try await ProxyTests.signedIn(gateway)
            let grant = try await Self.handoff(gateway, session: session)
            let bar = Self.host("spa", gateway) + GatewayBarTests.bar + [("Content-Type", "application/x-www-form-urlencoded")]
            let anonymous = try await gateway.send(.POST, Paths.frame, cookies: [:], headers: bar, body: "bar=collapsed")
            #expect(anonymous.status == 303)
            // From a form on another site (no bar header): refused.
            let form = Self.host("spa", gateway) + [("Content-Type", "application/x-www-form-urlencoded"), ("Sec-Fetch-Site", "cross-site")]
            #expect(try await gateway.send(.POST, Paths.frame, cookies: ["gatehouse_app": grant], headers: form, body: "bar=collapsed").status == 403)
            #expect(try await gateway.send(.POST, Paths.frame, cookies: ["gatehouse_app": grant], headers: bar, body: "bar=collapsed").status == 204)
            // A tab coming back into view asks the member's level on the app host itself (never the app's), with the
            // bar's header only; without a grant it is sent to sign in.
            let state = try await gateway.get(Paths.frame, cookies: ["gatehouse_app": grant], headers: Self.host("spa", gateway) + GatewayBarTests.bar)
            #expect(state.status == 200 && state.body.hasPrefix(#"{"level":"sso","session":{"#))
            #expect(try await gateway.get(Paths.frame, cookies: ["gatehouse_app": grant], headers: Self.host("spa", gateway)).status == 403)
            #expect(try await gateway.get(Paths.frame, cookies: [:], headers: Self.host("spa", gateway) + GatewayBarTests.bar).status == 303)
            #expect(try await gateway.get(Paths.frame, cookies: session, headers: GatewayBarTests.bar).body.hasPrefix(#"{"level":"sso","session":{"#))
            // The same session on the gateway's own host and on the app host: collapsed on both.
            let page = try await gateway.get("/apps/wiki/html", cookies: session, headers: GatewayBarTests.document)
            #expect(page.body.contains("<gatehouse-bar id=\"gatehouse-bar\" data-collapsed=\"\" data-place=\"auto\">"))
            let onHost = try await gateway.get(
                "/html", cookies: ["gatehouse_app": grant], headers: Self.host("spa", gateway) + GatewayBarTests.document)
            #expect(onHost.body.contains("<gatehouse-bar id=\"gatehouse-bar\" data-collapsed=\"\" data-place=\"auto\">"))
            #expect(onHost.body.contains("href=\"\(gateway.origin)/static/gatehouse-bar."))
            // Pages on an app host are compressed as on the gateway's own host.
            let gzipped = try await gateway.get(
                "/html", cookies: ["gatehouse_app": grant],
                headers: Self.host("spa", gateway) + GatewayBarTests.document + [("Accept-Encoding", "gzip")])
            #expect(gzipped.headers.first(name: "Content-Encoding") == "gzip" && gzipped.body.contains("<gatehouse-bar"))
            #expect(gzipped.headers["Vary"].joined().lowercased().contains("accept-encoding"))
            // The upgrade from the app host comes back to the app, through its loading page on the gateway.
            #expect(onHost.body.contains("\(gateway.origin)/upgrade?from=banner&amp;return_to=%2Fopen%2Fspa\""))
        }
    }

    @Test func theHandoffCarriesTheSessionToTheAppHostOnly() async throws {
        try await Self.withHostMounts { gateway, _ in
            let session = try await ProxyTests.signedIn(gateway)
            let grant = try await Self.handoff(gateway, session: session)
            let servedBefore = gateway.servedByDataPlane("spa")
            let reply = try await gateway.get("/echo/x", cookies: ["gatehouse_app": grant], headers: Self.host("spa", gateway))
            #expect(reply.status == 200)
            // Once the grant has been looked up (the handoff's redirect), the app host's requests are the data plane's.
            #expect(gateway.servedByDataPlane("spa") == servedBefore + 1)
            let received = try ProxyTests.report(reply)
            #expect(received.headers["x-forwarded-user"] == [DevelopmentAccounts.all[0].sub])
            #expect(received.headers["cookie"] == nil)  // the grant cookie never goes upstream

            // The grant is for this app only.
            let elsewhere = try await gateway.get("/echo/x", cookies: ["gatehouse_app": grant], headers: Self.host("other", gateway))
            #expect(elsewhere.status == 303 && elsewhere.location?.contains("/apps-open/other") == true)
            // The gateway's own pages are not reachable on an app host, and unknown app hosts do not exist.
            #expect(try await gateway.get("/signin", cookies: [:], headers: Self.host("spa", gateway)).status == 303)
            #expect(try await gateway.get("/", cookies: [:], headers: Self.host("nope", gateway)).status == 404)

            // Signing out ends every grant of the session.
            let portal = try await gateway.get("/", cookies: session)
            #expect(portal.body.contains("href=\"/open/spa\""))
            let loading = try await gateway.get("/open/spa", cookies: session)
            #expect(loading.body.contains("data-target=\"http://spa.apps.localhost:\(gateway.port)/\""))
            let csrf = try #require(portal.body.firstMatch(of: /name="csrf" value="([^"]+)"/)?.1)
            _ = try await gateway.post("/signout", form: [("csrf", String(csrf))], cookies: session)
            let ended = try await gateway.get("/echo/x", cookies: ["gatehouse_app": grant], headers: Self.host("spa", gateway))
            #expect(ended.status == 303)
            #expect(gateway.servedByDataPlane("spa") == servedBefore + 1)
            // A browser coming back with the grant of an ended session forgets what the app kept on its host.
            #expect(ended.headers.first(name: "Clear-Site-Data")?.contains("\"storage\"") == true)
            // A browser that never had a grant is only sent to get one.
            #expect(try await gateway.get("/echo/x", cookies: [:], headers: Self.host("spa", gateway)).headers.first(name: "Clear-Site-Data") == nil)
        }
    }

    /// Sign-out passes through every app host the session was let into, each clearing what its app kept in the
    /// browser and its grant, then goes on to the provider; the chain is signed and short-lived, so that a link made
    /// elsewhere (another end, another host, later) clears nothing.
    @Test func signOutPassesThroughEveryAppHostTheMemberUsedAndNoForgedChainDoes() async throws {
        try await Self.withHostMounts { gateway, _ in
            let session = try await ProxyTests.signedIn(gateway)
            _ = try await Self.handoff(gateway, slug: "spa", session: session)
            _ = try await Self.handoff(gateway, slug: "other", session: session)
            let portal = try await gateway.get("/", cookies: session)
            let csrf = try #require(portal.body.firstMatch(of: /name="csrf" value="([^"]+)"/)?.1)
            let signedOut = try await gateway.post("/signout", form: [("csrf", String(csrf))], cookies: session)
            #expect(signedOut.headers.first(name: "Clear-Site-Data")?.contains("\"storage\"") == true)
            // Through the hosts in slug order, then to the provider's end of session.
            var location = try #require(signedOut.location)
            var passed: [String] = []
            for slug in ["other", "spa"] {
                let origin = "http://\(slug).apps.localhost:\(gateway.port)"
                #expect(location.hasPrefix(origin + "/__gatehouse/signed-out?"), "\(location)")
                let pass = try await gateway.get(String(location.dropFirst(origin.count)), cookies: [:], headers: Self.host(slug, gateway))
                #expect(pass.status == 303 && pass.headers.first(name: "Clear-Site-Data")?.contains("\"storage\"") == true)
                #expect(pass.setCookies.contains { $0.hasPrefix("gatehouse_app=;") && $0.contains("Max-Age=0") })
                passed.append(slug)
                location = try #require(pass.location)
            }
            #expect(passed == ["other", "spa"])
            #expect(location.hasPrefix(gateway.origin + "/dev-idp/") || location.hasPrefix(gateway.origin + "/signed-out"), "\(location)")

            // Forged chains: another end, another host's signature, an old one, no signature. None clears anything.
            let chain = HostMountController.signOutChain(
                slugs: ["spa"], then: gateway.origin + "/signed-out", appsDomain: AppsDomain(domain: "apps.localhost", publicURL: URL(string: gateway.origin)!),
                signature: { gateway.built.stores.keyring.lookupHash($0) })
            let path = String(chain.dropFirst("http://spa.apps.localhost:\(gateway.port)".count))
            let good = try await gateway.get(path, cookies: [:], headers: Self.host("spa", gateway))
            #expect(good.headers.first(name: "Clear-Site-Data") != nil && good.location == gateway.origin + "/signed-out")
            for forged in [
                path.replacingOccurrences(of: "signed-out&", with: "elsewhere&"),
                path.replacingOccurrences(of: FormEncoding.escape(gateway.origin + "/signed-out"), with: FormEncoding.escape("https://evil.example/")),
                path.replacingOccurrences(of: "sig=", with: "sig=x"),
                path.components(separatedBy: "&sig=")[0],
            ] {
                let reply = try await gateway.get(forged, cookies: [:], headers: Self.host("spa", gateway))
                #expect(reply.status == 303 && reply.headers.first(name: "Clear-Site-Data") == nil && reply.location == gateway.origin + "/", "\(forged)")
            }
            let otherHost = try await gateway.get(path, cookies: [:], headers: Self.host("other", gateway))
            #expect(otherHost.headers.first(name: "Clear-Site-Data") == nil)
            let late = HostMountController.signOutChain(
                slugs: ["spa"], then: gateway.origin + "/signed-out", appsDomain: AppsDomain(domain: "apps.localhost", publicURL: URL(string: gateway.origin)!),
                signature: { gateway.built.stores.keyring.lookupHash($0) }, now: Date().addingTimeInterval(-120))
            let expired = try await gateway.get(
                String(late.dropFirst("http://spa.apps.localhost:\(gateway.port)".count)), cookies: [:], headers: Self.host("spa", gateway))
            #expect(expired.headers.first(name: "Clear-Site-Data") == nil)
        }
    }

    @Test func codesWorkOnceOnlyInTheBrowserThatAskedWithinAMinute() async throws {
        try await Self.withHostMounts { gateway, _ in
            let session = try await ProxyTests.signedIn(gateway)
            let first = try await gateway.get("/", cookies: [:], headers: Self.host("spa", gateway))
            var appCookies = BrowserCookies()
            appCookies.absorb(first)
            let back = try await gateway.get(try #require(first.location), cookies: session)
            let handoff = String(try #require(back.location).dropFirst("http://spa.apps.localhost:\(gateway.port)".count))
            // Planted in another browser (no state cookie, or another one): refused.
            #expect(try await gateway.get(handoff, cookies: [:], headers: Self.host("spa", gateway)).status == 403)
            let again = try await gateway.get("/", cookies: [:], headers: Self.host("spa", gateway))
            var otherBrowser = BrowserCookies()
            otherBrowser.absorb(again)
            // The code was spent by the refused attempt; the right browser cannot use it afterwards either.
            #expect(try await gateway.get(handoff, cookies: appCookies.values, headers: Self.host("spa", gateway)).status == 403)
            // A code for one app does not open another.
            let secondBack = try await gateway.get(try #require(again.location), cookies: session)
            let secondHandoff = String(try #require(secondBack.location).dropFirst("http://spa.apps.localhost:\(gateway.port)".count))
            #expect(try await gateway.get(secondHandoff, cookies: otherBrowser.values, headers: Self.host("other", gateway)).status == 403)
            // Without a session the gateway asks for sign-in first, keeping the way back.
            let signedOut = try await gateway.get(try #require(again.location), cookies: [:])
            #expect(signedOut.location?.hasPrefix("/signin?return_to=%2Fapps-open%2Fspa") == true)
        }
    }

    @Test func hostMountedPagesLinkToOtherAppsAbsolutely() {
        let domain = AppsDomain(domain: "apps.example.org", publicURL: URL(string: "https://gate.example.org")!)
        let catalog = AppCatalog(
            apps: [
                AppConfiguration(slug: "spa", name: "SPA", upstream: URL(string: "https://spa.internal.example.org/")!, mount: .host),
                AppConfiguration(slug: "wiki", name: "Wiki", upstream: URL(string: "https://wiki.internal.example.org/")!),
            ], publicOrigin: "https://gate.example.org", appsDomain: domain)
        let spa = catalog.urlRewriter(for: "spa")!
        #expect(spa.rewrite("/x") == "/x")
        #expect(spa.rewrite("https://spa.internal.example.org/y") == "/y")
        #expect(spa.rewrite("https://wiki.internal.example.org/z") == "https://gate.example.org/apps/wiki/z")
        let wiki = catalog.urlRewriter(for: "wiki")!
        #expect(wiki.rewrite("https://spa.internal.example.org/y") == "https://spa.apps.example.org/y")
        #expect(domain.slug(inAuthority: "SPA.apps.example.org:443") == "spa")
        #expect(domain.slug(inAuthority: "a.spa.apps.example.org") == nil)
        #expect(domain.slug(inAuthority: "apps.example.org") == nil)
        #expect(domain.slug(inAuthority: "spa.apps.example.org.evil.net") == nil)
    }

    /// Links in chat messages: an app's own (upstream) address opens through the gateway on the app's mount, the
    /// gateway's pages and app hosts stay as they are, and any other address outside the allowlist goes through the
    /// leaving page, however it is dressed up.
    @Test(arguments: [
        ("https://wiki.internal.example.org/page?id=1#top", "https://gate.example.org/apps/wiki/page?id=1#top"),
        ("https://spa.internal.example.org/board", "https://spa.apps.example.org/board"),
        ("https://gate.example.org/chats", "https://gate.example.org/chats"),
        ("https://spa.apps.example.org/x", "https://spa.apps.example.org/x"),
        ("https://docs.example.org/guide", "https://docs.example.org/guide"),
        ("mailto:olive@example.org", "mailto:olive@example.org"),
        ("https://evil.example.net/", "https://gate.example.org/leaving?to=https%3A%2F%2Fevil.example.net%2F"),
        ("https://wiki.internal.example.org@evil.example.net/", "https://gate.example.org/leaving?to=https%3A%2F%2Fevil.example.net%2F"),
        ("https://gate.example.org.evil.example.net/", "https://gate.example.org/leaving?to=https%3A%2F%2Fgate.example.org.evil.example.net%2F"),
    ])
    func linksInMessagesGoThroughTheGateway(link: String, goes: String) {
        let catalog = AppCatalog(
            apps: [
                AppConfiguration(slug: "spa", name: "SPA", upstream: URL(string: "https://spa.internal.example.org/")!, mount: .host),
                AppConfiguration(slug: "wiki", name: "Wiki", upstream: URL(string: "https://wiki.internal.example.org/")!),
            ], publicOrigin: "https://gate.example.org",
            appsDomain: AppsDomain(domain: "apps.example.org", publicURL: URL(string: "https://gate.example.org")!),
            allowlist: Allowlist(["*.internal.example.org", "docs.example.org"]))
        #expect(catalog.messageLink(link) == goes)
    }
}
