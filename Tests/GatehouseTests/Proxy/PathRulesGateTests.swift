import Foundation
import GatehouseCore
import Testing

@testable import Gatehouse

/// An app's rules per path, held by the one access gate on every way in: the data plane's pages, the application's
/// requests with a body, WebSocket upgrades; with hostile spellings of the paths.
@Suite(.serialized) struct PathRulesGateTests {
    static let rules = PathRules([
        .init(paths: ["/admin/*"], action: .deny),
        .init(paths: ["/reports/*"], require: .init(roles: ["auditor"])),
        .init(paths: ["/echo/members/*"], methods: ["POST"], require: .init(level: .registered)),
        .init(paths: ["/echo/team/*"], require: .init(groups: ["nobody-is-in-this"])),
        .init(paths: ["/ws"], methods: ["GET"], action: .deny),
    ])

    @Test func rulesRefuseEverySpellingOnEveryWayIn() async throws {
        try await ProxyTests.withProxy(configure: { $0.apps[0].rules = Self.rules }) { gateway, _ in
            let cookies = try await ProxyTests.signedIn(gateway)
            let closed = [
                "/apps/echo/admin", "/apps/echo/admin/", "/apps/echo/admin/users", "/apps/echo//admin/users", "/apps/echo/%61dmin/users",
                "/apps/echo/%2561dmin/users", "/apps/echo/admin;jsessionid=1/users", "/apps/echo/admin%3Bx/users",
                "/apps/echo/admin?next=/", "/apps/echo/x%2F..%2Fadmin",
            ]
            for path in closed {
                let reply = try await gateway.get(path, cookies: cookies, headers: [("Accept", "text/html")])
                #expect([400, 403].contains(reply.status), "\(path)")
                #expect(!reply.body.contains("\"headers\""), "\(path) reached the app")
                if reply.status == 403 { #expect(reply.body.contains("This part of the app is closed"), "\(path)") }
            }
            #expect(gateway.servedByDataPlane("echo") == 0)
            // A body goes the application's way: refused there alike, and as JSON to an API caller.
            let posted = try await gateway.send(.POST, "/apps/echo/admin/x", cookies: cookies, headers: [("Accept", "application/json")], body: "x")
            #expect(posted.status == 403 && posted.body.contains(#""error":"path_denied""#), "\(posted.body)")
            // WebSocket upgrades ask the same gate (the echo app's WebSocket, open to everyone without the rule).
            await #expect(throws: (any Error).self) {
                _ = try await ProxyTests.webSocket(gateway, cookies: cookies, path: "ws", send: ["hi"])
            }

            // What the member lacks is named.
            let reports = try await gateway.get("/apps/echo/reports/q3", cookies: cookies, headers: [("Accept", "text/html")])
            #expect(reports.status == 403 && reports.body.contains("It needs the role auditor"))
            let team = try await gateway.get("/apps/echo/echo/team/x", cookies: cookies, headers: [("Accept", "text/html")])
            #expect(team.status == 403 && team.body.contains("members of nobody-is-in-this"))
            // A rule for POST leaves GET to the app's own requirements; the level it asks for leads to the upgrade.
            #expect(try await gateway.get("/apps/echo/echo/members/x", cookies: cookies).status == 200)
            let upgrade = try await gateway.send(.POST, "/apps/echo/echo/members/x", cookies: cookies, headers: [("Accept", "text/html")], body: "x")
            #expect(upgrade.status == 403 && !upgrade.body.contains("\"headers\""))
            // Paths outside every rule, and spellings that are another path, reach the app.
            for open in ["/apps/echo/echo/adminx", "/apps/echo/echo/public/admin", "/apps/echo/echo/ADMIN"] {
                #expect(try await gateway.get(open, cookies: cookies).status == 200, "\(open)")
            }
        }
    }
}
