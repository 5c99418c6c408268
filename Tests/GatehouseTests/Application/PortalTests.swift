import Foundation
import GatehouseCore
import Testing

@testable import Gatehouse

/// The web apps page: tiles with icons, the upgrade offered at level `sso`, and the empty state.
@Suite struct PortalTests {
    @Test func iconsAreTheConfiguredImageOrAMonogramWithAStableColour() {
        let url = URL(string: "https://wiki.example.org")!
        let wiki = AppIcon(AppConfiguration(slug: "wiki", name: "Team Wiki", upstream: url))
        #expect(wiki.image == nil && wiki.monogram == "TW")
        #expect(wiki.tone == AppIcon(AppConfiguration(slug: "wiki", name: "Other", upstream: url)).tone)  // by slug, in every process
        #expect((0..<AppIcon.tones).contains(wiki.tone))
        #expect(AppIcon(AppConfiguration(slug: "a", name: "Payroll", icon: "$", upstream: url)).monogram == "$")
        let image = AppIcon(AppConfiguration(slug: "b", name: "File Store (beta)", icon: "/static/icons/files.svg", upstream: url))
        #expect(image.image == "/static/icons/files.svg" && image.monogram == "FS")
        // Only a path on the gateway is an image (the pages' policy allows no other images); anything else is letters.
        #expect(AppIcon(AppConfiguration(slug: "c", name: "Chat", icon: "//evil.example/x.png", upstream: url)).image == nil)
        // Different slugs spread over the colours.
        let tones = Set(
            ["wiki", "files", "chat", "calls", "payroll", "visits", "links", "gzip"].map {
                AppIcon(AppConfiguration(slug: $0, name: $0, upstream: url)).tone
            })
        #expect(tones.count > 3)
        #expect(AppIcon.monogram("Links and Forms") == "LF" && AppIcon.monogram("calendar") == "CA")
        // Apps of one word each get two letters, so that names starting alike are told apart.
        #expect(AppIcon.monogram("Chats") == "CH" && AppIcon.monogram("Calls") == "CA" && AppIcon.monogram("X") == "X")
    }

    @Test func aMemberAtSSOIsOfferedTheUpgradeAndAMemberWithoutAppsSeesWhy() async throws {
        try await LiveGateway.run(configure: { $0.apps = [] }) { gateway in
            let flow = try await SignInFlowTests.signIn(gateway, deepLink: "/")
            let portal = try await gateway.get("/", cookies: flow.cookies.values)
            #expect(portal.body.contains(#"id="no-apps""#) && portal.body.contains("Ask your administrator"))
            #expect(portal.body.contains(#"id="portal-add-features" href="/upgrade?from=portal&amp;return_to=%2F""#))
            // The account menu holds the roles and the sign-out form.
            #expect(portal.body.contains(#"<details class="member-menu" id="member-menu">"#) && portal.body.contains(#"id="sign-out""#))
        }
    }

    @Test func tilesOpenALoadingPageThatGoesOnToTheApp() async throws {
        try await ProxyTests.withProxy { gateway, _ in
            let cookies = try await ProxyTests.signedIn(gateway)
            let portal = try await gateway.get("/", cookies: cookies)
            #expect(portal.body.contains(#"href="/open/echo""#))
            let loading = try await gateway.get("/open/echo", cookies: cookies)
            #expect(loading.status == 200)
            #expect(loading.body.contains("<h1 id=\"loading-title\">Loading Echo</h1>") && loading.body.contains(#"data-target="/apps/echo/""#))
            #expect(loading.body.contains(#"<noscript><meta http-equiv="refresh" content="0;url=/apps/echo/"></noscript>"#))
            #expect(try await gateway.get("/open/no-such-app", cookies: cookies).status == 404)
            // An app the member's roles do not reach is not named; a registered-only one goes on to its prompt.
            let admin = try await gateway.get("/open/admin", cookies: cookies)
            #expect(admin.status == 404 && !admin.body.contains("Admin"))
            #expect(try await gateway.get("/open/chat", cookies: cookies).body.contains(#"data-target="/apps/chat/""#))
            #expect(try await gateway.get("/open/echo", cookies: [:]).location?.hasPrefix("/signin") == true)
        }
    }

    @Test func recentAppsAreSlugsNewestFirst() {
        let opened = RecentApps().opening("wiki").opening("files").opening("wiki").opening("mail").opening("hr").opening("pay")
        #expect(opened.slugs == ["pay", "hr", "mail", "wiki"])
        // Whatever the store holds, only slugs are read back, each once, at most four.
        #expect(RecentApps(slugs: ["wiki", "wiki", "WIKI", "../etc", "<script>", String(repeating: "a", count: 41), "files", "a", "b", "c"]).slugs
            == ["wiki", "files", "a", "b"])
    }

    @Test func manyAppsAreFilterableAndTheRecentlyUsedComeFirst() async throws {
        let apps = (1...8).map { index in
            AppConfiguration(
                slug: "app\(index)", name: "App \(index)", description: index == 3 ? "Payroll & <expenses>" : nil,
                upstream: URL(string: "http://127.0.0.1:9/")!)
        }
        try await LiveGateway.run(configure: { $0.apps = apps }) { gateway in
            let flow = try await SignInFlowTests.signIn(gateway, deepLink: "/")
            var cookies = flow.cookies.values
            let before = try await gateway.get("/", cookies: cookies)
            #expect(before.body.contains(#"id="app-filter""#) && !before.body.contains(#"id="recent-apps""#))
            // The description is one line of text on the tile, escaped, and what the tile's link is described by.
            #expect(before.body.contains(#"aria-describedby="about-app3""#) && before.body.contains("Payroll &amp; &lt;expenses&gt;"))
            for slug in ["app5", "app2", "app5"] {
                // Kept at the gateway with the member, nothing of it in the browser.
                #expect(try await gateway.get("/open/\(slug)", cookies: cookies).setCookies.isEmpty)
            }
            // After signing out and in again (a sign-out clears the browser's cookies), the history is still there.
            let portal = try await gateway.get("/", cookies: cookies)
            let csrf = try #require(portal.body.firstMatch(of: /name="csrf" value="([^"]+)"/)?.1)
            let signOut = try await gateway.post("/signout", form: [("csrf", String(csrf))], cookies: cookies, headers: [("Origin", gateway.origin)])
            // Only the types browsers know (Chromium logs any other, such as `executionContexts`, as unrecognized).
            #expect(signOut.headers["Clear-Site-Data"] == [#""cache", "cookies", "storage""#])
            cookies = try await SignInFlowTests.signIn(gateway, deepLink: "/").cookies.values
            let after = try await gateway.get("/", cookies: cookies)
            let recent = try #require(after.body.firstRange(of: #"id="recent-apps""#))
            let more = try #require(after.body.firstRange(of: #"id="apps""#))
            let order = ["app5", "app2", "app1", "app3"].map { after.body.firstRange(of: "data-app=\"\($0)\"")!.lowerBound }
            #expect(order == order.sorted() && recent.lowerBound < order[0] && order[1] < more.lowerBound && more.lowerBound < order[2])
            // Each app once.
            #expect(after.body.ranges(of: #"data-app="app5""#).count == 1)
            // Another member of the same browser has a history of their own (none yet).
            let bob = try await SignInFlowTests.signIn(gateway, as: "bob", deepLink: "/")
            #expect(!(try await gateway.get("/", cookies: bob.cookies.values)).body.contains(#"id="recent-apps""#))
        }
        // A few apps: no filter, no reordering.
        try await LiveGateway.run(configure: { $0.apps = Array(apps.prefix(3)) }) { gateway in
            let flow = try await SignInFlowTests.signIn(gateway, deepLink: "/")
            let portal = try await gateway.get("/", cookies: flow.cookies.values)
            #expect(!portal.body.contains(#"id="app-filter""#) && portal.body.contains(#"data-app="app1""#))
        }
    }
}
