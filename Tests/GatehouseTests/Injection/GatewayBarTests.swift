import Foundation
import GatehouseCore
import Testing

@testable import Gatehouse

/// The gateway bar: what it shows for each member and app, and the choices the member makes in it, which only the
/// bar's own script can change.
@Suite(.serialized) struct GatewayBarTests {
    static let document = [("Sec-Fetch-Dest", "document"), ("Accept", "text/html")]
    static let bar = [("X-Gatehouse-Frame", "1"), ("Accept", "application/json")]

    /// A bar rendered outside any request, on a catalog where one app needs a role and one has the bar off.
    static func withBar(
        registration: RegistrationConfiguration = .init(), _ body: (GatewayBar, [AppConfiguration]) async throws -> Void
    ) async throws {
        let configuration = try LiveGateway.developmentConfiguration(port: 8080)
        let renderer = try await PageRenderer.load(configuration: configuration)
        let upstream = URL(string: "http://127.0.0.1:9/")!
        let apps = [
            AppConfiguration(slug: "wiki", name: "Team <Wiki>", upstream: upstream),
            AppConfiguration(slug: "admin", name: "Admin", upstream: upstream, requiredRoles: ["admin"]),
            AppConfiguration(slug: "board", name: "Board", upstream: upstream, gatewayBar: .handle),
            AppConfiguration(slug: "chat", name: "Chat", upstream: upstream, minimumLevel: .registered),
        ]
        try await SessionLifecycleTests.Harness.with(.sqlite) { harness in
            try await body(
                GatewayBar(
                    renderer: renderer, catalog: AppCatalog(apps: apps), features: FeaturesConfiguration(chats: "chat"), registration: registration,
                    events: harness.recorder),
                apps)
        }
    }

    static func member(level: AuthLevel, roles: [String] = [], frame: FramePreferences? = nil) -> Session {
        var session = SessionLifecycleTests.session(cookie: "bar")
        session.level = level
        session.identity.roles = roles
        session.frame = frame
        return session
    }

    @Test func theBarShowsTheMembersAppsAndLevel() async throws {
        try await Self.withBar { bar, apps in
            let sso = try bar.html(nonce: "N1", session: Self.member(level: .sso), app: apps[0], returnTo: "/apps/wiki/x?a=1&b=2", gatewayBase: "")
            #expect(sso.contains("<gatehouse-bar id=\"gatehouse-bar\" data-place=\"auto\"><template shadowrootmode=\"open\">"))
            #expect(sso.contains("<style id=\"gatehouse-bar-space\" media=\"screen\" nonce=\"N1\">"))
            // The switcher: the apps the member's roles reach (names escaped), the current one marked; not the admin app.
            #expect(sso.contains("<a href=\"/open/wiki\" data-app=\"wiki\" aria-current=\"page\">"))
            #expect(sso.contains("Team &lt;Wiki&gt;") && !sso.contains("Team <Wiki>"))
            #expect(sso.contains("data-app=\"board\"") && !sso.contains("data-app=\"admin\"") && !sso.contains("data-app=\"chat\""))
            // At `sso`: the banner with its accessibility strings, the chat features locked, the way back encoded.
            #expect(sso.contains("id=\"gatehouse-banner\" aria-label=\"Add Signal Features for messaging and calls\""))
            #expect(sso.contains("href=\"/upgrade?from=banner&amp;return_to=%2Fapps%2Fwiki%2Fx%3Fa%3D1%26b%3D2\""))
            #expect(sso.matches(of: /class="(link )?locked" aria-describedby="locked-note"/).count == 6)
            #expect(sso.contains("<span class=\"hidden-text\" id=\"locked-note\">locked until Signal features are added</span>"))

            let admin = try bar.html(
                nonce: "N2", session: Self.member(level: .registered, roles: ["admin"]), app: apps[0], returnTo: "/", gatewayBase: "")
            #expect(admin.contains("data-app=\"admin\""))
            #expect(!admin.contains("gatehouse-banner") && !admin.contains("locked"))
            #expect(admin.contains("id=\"bar-chats\" href=\"/chats\">Chats</a>"))
        }
    }

    /// `registration.required_roles`: members without the role see the features locked and no banner (nothing to add
    /// for them); members with it see the banner. `registration.enabled: false` takes it from everybody.
    @Test func theBannerIsOnlyForMembersTheUpgradeIsOfferedTo() async throws {
        try await Self.withBar(registration: RegistrationConfiguration(requiredRoles: ["chat-user"])) { bar, apps in
            let without = try bar.html(nonce: "N", session: Self.member(level: .sso), app: apps[0], returnTo: "/", gatewayBase: "")
            #expect(!without.contains("gatehouse-banner") && !without.contains("gatehouse-add-features"))
            #expect(without.contains("id=\"locked-note\""))
            let with = try bar.html(nonce: "N", session: Self.member(level: .sso, roles: ["chat-user"]), app: apps[0], returnTo: "/", gatewayBase: "")
            #expect(with.contains("id=\"gatehouse-banner\"") && with.contains("id=\"gatehouse-add-features\""))
        }
        try await Self.withBar(registration: RegistrationConfiguration(enabled: false)) { bar, apps in
            let html = try bar.html(nonce: "N", session: Self.member(level: .sso, roles: ["chat-user"]), app: apps[0], returnTo: "/", gatewayBase: "")
            #expect(!html.contains("gatehouse-banner"))
        }
    }

    @Test func theMembersChoicesAndTheAppsSettingDecideHowTheBarStarts() async throws {
        try await Self.withBar { bar, apps in
            /// The host's attributes and the media of the style reserving room above the page.
            func state(_ session: Session, _ app: AppConfiguration) throws -> String {
                let html = try bar.html(nonce: "N", session: session, app: app, returnTo: "/", gatewayBase: "")
                let host = try #require(html.firstMatch(of: /<gatehouse-bar id="gatehouse-bar"([^>]*)>/)?.1)
                let media = try #require(html.firstMatch(of: /media="([^"]+)"/)?.1)
                return "\(host) | \(media)"
            }
            let fresh = try state(Self.member(level: .sso), apps[0])
            #expect(fresh == " data-place=\"auto\" | screen")
            let chosen = try state(Self.member(level: .sso, frame: FramePreferences(barCollapsed: true, bannerDismissed: true)), apps[0])
            #expect(chosen == " data-collapsed=\"\" data-banner-dismissed=\"\" data-place=\"auto\" | not all")
            // The bar off for this app: only the handle, opening over the page, whatever the member chose elsewhere.
            let off = try state(Self.member(level: .sso, frame: FramePreferences(barCollapsed: false)), apps[2])
            #expect(off == " data-collapsed=\"\" data-overlay=\"\" data-place=\"top\" | not all")
        }
    }

    @Test func theBarMarksTheSectionTheMemberIsIn() async throws {
        try await Self.withBar { bar, apps in
            let registered = Self.member(level: .registered)
            let chat = try bar.html(nonce: "N", session: registered, app: apps[3], returnTo: "/", gatewayBase: "")
            #expect(chat.contains(#"id="bar-chats" href="/chats" aria-current="page">"#))
            #expect(chat.contains(#"<li><a href="/chats" aria-current="page">"#))  // the narrow menu's entry too
            #expect(!chat.contains(#"id="bar-calls" href="/calls" aria-current"#))
            let wiki = try bar.html(nonce: "N", session: registered, app: apps[0], returnTo: "/", gatewayBase: "")
            #expect(!wiki.contains(#"href="/chats" aria-current"#) && wiki.contains(#"data-app="wiki" aria-current="page""#))
        }
    }

    @Test func onAnAppHostTheBarNamesTheGatewaysOrigin() async throws {
        try await Self.withBar { bar, apps in
            let html = try bar.html(nonce: "N", session: Self.member(level: .sso), app: apps[0], returnTo: "/", gatewayBase: "https://gate.example")
            let files = [Paths.barStyle, Paths.barScript, Paths.toastsScript].map { bar.renderer.assets.url(for: $0) }
            #expect(files.allSatisfy { $0.wholeMatch(of: /\/static\/gatehouse-[a-z]+\.[0-9a-f]{10}\.(css|js)/) != nil }, "\(files)")
            for path in files + ["/open/wiki", "/chats", "/upgrade?"] {
                #expect(html.contains("\"https://gate.example\(path)"), "\(path)")
            }
            #expect(!html.contains("=\"/"))
        }
    }

    @Test func theBarComesOnEveryPageTheMemberReadsAndNoWhereElse() async throws {
        try await ProxyTests.withProxy { gateway, _ in
            let cookies = try await ProxyTests.signedIn(gateway)
            let notFound = try await gateway.get("/apps/echo/html?status=404", cookies: cookies, headers: Self.document)
            #expect(notFound.status == 404 && notFound.body.contains("<gatehouse-bar"))
            let head = try await gateway.send(.HEAD, "/apps/echo/html", cookies: cookies, headers: Self.document, body: nil)
            #expect(head.body.isEmpty)
            let redirect = try await gateway.get("/apps/echo/redirect?to=%2Fecho%2Fy", cookies: cookies, headers: Self.document)
            #expect(redirect.status == 302 && !redirect.body.contains("gatehouse-bar"))
        }
    }

    @Test func onlyTheBarsScriptChangesItsChoicesAndTheyLastForTheSession() async throws {
        try await ProxyTests.withProxy { gateway, _ in
            let cookies = try await ProxyTests.signedIn(gateway)
            func choose(_ form: String, headers: [(String, String)] = Self.bar, cookies: [String: String] = cookies) async throws -> LiveGateway.Reply
            {
                try await gateway.send(
                    .POST, Paths.frame, cookies: cookies, headers: [("Content-Type", "application/x-www-form-urlencoded")] + headers, body: form)
            }
            // Hostile or broken requests change nothing and say why, as JSON.
            let refused: [(String, [(String, String)], Int)] = [
                ("bar=collapsed", [("Accept", "application/json")], 403),  // a form from anywhere: no header
                ("bar=collapsed", Self.bar + [("Sec-Fetch-Site", "cross-site")], 403),
                ("bar=collapsed", Self.bar + [("Sec-Fetch-Site", "same-site")], 403),
                ("bar=hidden", Self.bar, 400), ("level=registered", Self.bar, 400), ("", Self.bar, 400),
                ("bar=collapsed&banner=dismissed&csrf=" + String(repeating: "x", count: 400), Self.bar, 413),
            ]
            for (form, headers, status) in refused {
                let reply = try await choose(form, headers: headers)
                #expect(reply.status == status, "\(form.prefix(40)) \(headers)")
                #expect(reply.headers.first(name: "Content-Type")?.hasPrefix("application/json") == true)
            }
            #expect(try await choose("bar=collapsed", cookies: [:]).status != 204)
            var page = try await gateway.get("/apps/echo/html", cookies: cookies, headers: Self.document)
            #expect(page.body.contains("<gatehouse-bar id=\"gatehouse-bar\" data-place=\"auto\">") && page.body.contains("media=\"screen\""))

            #expect(try await choose("bar=collapsed").status == 204)
            #expect(try await choose("banner=dismissed", headers: Self.bar + [("Sec-Fetch-Site", "same-origin")]).status == 204)
            #expect(try await choose("banner=dismissed").status == 204)
            page = try await gateway.get("/apps/echo/html?doc=%3Cbody%3E", cookies: cookies, headers: Self.document)
            #expect(page.body.contains("<gatehouse-bar id=\"gatehouse-bar\" data-collapsed=\"\" data-banner-dismissed=\"\" data-place=\"auto\">"))
            #expect(try await choose("bar=expanded").status == 204)
            page = try await gateway.get("/apps/echo/html", cookies: cookies, headers: Self.document)
            #expect(page.body.contains("<gatehouse-bar id=\"gatehouse-bar\" data-banner-dismissed=\"\" data-place=\"auto\">"))
            // Dismissing is counted once, however often the script repeats it; the banner is no longer counted as shown.
            let samples = MetricsTests.samples(gateway.built.metrics.exposition())
            #expect(samples["gatehouse_banner_dismissed_total"] == 1)
            #expect(samples["gatehouse_banner_shown_total"] == 1)

            // Another member's session is untouched.
            let bob = try await ProxyTests.signedIn(gateway, as: "bob")
            #expect(
                try await gateway.get("/apps/echo/html", cookies: bob, headers: Self.document).body.contains(
                    "<gatehouse-bar id=\"gatehouse-bar\" data-place=\"auto\">"))
        }
    }
}
