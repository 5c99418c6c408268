import Foundation
import GatehouseCore
import HTTPTypes
import Testing

@testable import Gatehouse

/// The gateway's own pages out of reach of apps' scripts, decided from what the browser says a request is for; the
/// headers that keep gateway pages and app pages apart; and the warning for path mounts that mix trust.
@Suite struct GatewayIsolationTests {
    static func headers(mode: String?, dest: String?, token: String? = nil, referer: String? = nil) -> HTTPFields {
        var fields = HTTPFields()
        if let mode { fields[GatewayPageIsolation.fetchMode] = mode }
        if let dest { fields[GatewayPageIsolation.fetchDest] = dest }
        if let token { fields[GatewayPageIsolation.pageToken] = token }
        if let referer { fields[.referer] = referer }
        return fields
    }

    static let gatewayPages = [
        "/", "/chats", "/account/sessions", "/account/language", "/upgrade", "/upgrade/code", "/operator", "/operator/funnel", "/signin",
        "/signout", "/signed-out", "/leaving", "/dev/inbox", "/open/wiki", "/nowhere",
    ]

    @Test(arguments: gatewayPages) func aGatewayPageIsOnlyANavigationOfADocument(path: String) {
        #expect(GatewayPageIsolation.refusal(method: .get, path: path, headers: Self.headers(mode: "navigate", dest: "document")) == nil)
        #expect(GatewayPageIsolation.refusal(method: .post, path: path, headers: Self.headers(mode: "navigate", dest: "document")) == nil)
        // No Sec-Fetch fields (a server, an old browser): the usual checks alone.
        #expect(GatewayPageIsolation.refusal(method: .get, path: path, headers: [:]) == nil)
        for (mode, dest) in [("cors", "empty"), ("same-origin", "empty"), ("navigate", "iframe"), ("navigate", "frame"), ("no-cors", "image"),
            ("no-cors", "script"), ("navigate", "embed"), ("navigate", "object"), ("no-cors", "style"), ("websocket", "websocket")]
        {
            #expect(GatewayPageIsolation.refusal(method: .get, path: path, headers: Self.headers(mode: mode, dest: dest)) != nil, "\(mode) \(dest)")
            // A page token opens only the paths the gateway's own scripts ask.
            #expect(
                GatewayPageIsolation.refusal(method: .get, path: path, headers: Self.headers(mode: mode, dest: dest, token: "t")) != nil)
        }
        // A form posted from an app's page, whatever token it carries.
        for referer in ["http://gate.test/apps/links/", "https://gate.test/apps/links/page?x=1", "/apps-open/wiki"] {
            #expect(
                GatewayPageIsolation.refusal(method: .post, path: path, headers: Self.headers(mode: "navigate", dest: "document", referer: referer))
                    != nil)
        }
        #expect(
            GatewayPageIsolation.refusal(
                method: .post, path: path, headers: Self.headers(mode: "navigate", dest: "document", referer: "http://gate.test/account/sessions")) == nil)
    }

    @Test func appsStaticFilesAndServerEndpointsAreLeftAlone() {
        for path in ["/apps/links/", "/apps/links/api/x", "/apps-open/wiki", "/static/gatehouse.css", "/healthz", "/readyz", "/__gatehouse/frame",
            "/auth/verify", "/auth/backchannel-logout", "/.well-known/jwks.json"]
        {
            #expect(GatewayPageIsolation.refusal(method: .get, path: path, headers: Self.headers(mode: "cors", dest: "empty")) == nil, "\(path)")
        }
        // The username check answers the upgrade page's own script, which sends the page's token.
        let check = Paths.upgradeUsernameCheck
        #expect(GatewayPageIsolation.refusal(method: .get, path: check, headers: Self.headers(mode: "cors", dest: "empty", token: "t")) == nil)
        #expect(GatewayPageIsolation.refusal(method: .get, path: check, headers: Self.headers(mode: "cors", dest: "empty")) != nil)
    }

    /// An app page never carries the gateway pages' `same-origin` opener policy (they would share a browsing context
    /// group); what else the app asks for stays.
    @Test(arguments: [
        (nil, "unsafe-none"), ("", "unsafe-none"), ("same-origin", "same-origin-allow-popups"), ("Same-Origin", "same-origin-allow-popups"),
        ("same-origin; report-to=\"coop\"", "same-origin-allow-popups"), ("same-origin-allow-popups", "same-origin-allow-popups"),
        ("unsafe-none", "unsafe-none"), ("noopener-allow-popups", "noopener-allow-popups"),
    ])
    func anAppsOpenerPolicyIsNeverTheGatewaysOwn(upstream: String?, expected: String) {
        #expect(AnswerMapping.openerPolicy(upstream) == expected)
    }

    @Test func eachAppGetsOnlyThePowerfulFeaturesItIsAllowed() async throws {
        var configuration = try LiveGateway.developmentConfiguration(port: 8080)
        configuration.apps = [
            AppConfiguration(slug: "calls", name: "Calls", upstream: URL(string: "http://127.0.0.1:1/")!, permissions: ["camera", "microphone"]),
            AppConfiguration(slug: "wiki", name: "Wiki", upstream: URL(string: "http://127.0.0.1:1/")!),
        ]
        let mapping = AnswerMapping(configuration: configuration, renderer: try await PageRenderer.load(configuration: configuration))
        func policy(_ app: AppConfiguration, upstream: HTTPFields) throws -> [String] {
            let mount = URLRewriter.Mount(prefix: Paths.app(app.slug), upstream: app.upstream)
            return try mapping.map(
                app: app, status: .ok, upstream: upstream, isHEAD: false, isNavigation: true, acceptsGzip: false, url: app.upstream,
                urls: URLRewriter(current: mount, all: [mount]), logger: .init(label: "test")
            ).headers[values: SecurityHeaders.permissionsPolicy]
        }
        let calls = try policy(configuration.apps[0], upstream: [.contentType: "text/html"])
        #expect(calls.count == 1 && calls[0].contains("camera=(self)") && calls[0].contains("microphone=(self)") && calls[0].contains("geolocation=()"))
        // The app's own policy stays in front; the gateway's, after it, has the last word on what it names.
        let wiki = try policy(configuration.apps[1], upstream: [.contentType: "text/html", SecurityHeaders.permissionsPolicy: "camera=*"])
        #expect(wiki.count == 2 && wiki[0] == "camera=*" && wiki[1].contains("camera=()") && wiki[1].contains("microphone=()"))
        var gateways = HTTPFields()
        SecurityHeaders(identityProviderOrigins: [], isHTTPS: false).apply(to: &gateways)
        #expect(gateways[SecurityHeaders.permissionsPolicy]?.contains("camera=()") == true)
        #expect(gateways[SecurityHeaders.openerPolicy] == "same-origin")
    }

    @Test func pathMountsThatMixTrustAreWarnedAbout() throws {
        var configuration = try LiveGateway.developmentConfiguration(port: 8080)
        let upstream = URL(string: "https://wiki.example.org/")!
        configuration.apps = [
            AppConfiguration(slug: "wiki", name: "Wiki", upstream: upstream), AppConfiguration(slug: "docs", name: "Docs", upstream: upstream),
            AppConfiguration(slug: "payroll", name: "Payroll", upstream: upstream, requiredRoles: ["hr"], mount: .host),
        ]
        #expect(configuration.warnings.isEmpty)
        configuration.apps.append(AppConfiguration(slug: "chat", name: "Chat", upstream: upstream, minimumLevel: .registered))
        #expect(configuration.warnings.count == 1 && configuration.warnings[0].contains("[chat] / [docs, wiki]"))
    }
}
