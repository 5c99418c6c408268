import Foundation
import GatehouseCore
import Testing

@testable import Gatehouse

/// The operator console over real sockets: operators only (a member without the role gets the "not allowed" page
/// and no data), and every view's figures equal to its JSON twin's after a scripted journey.
@Suite(.serialized) struct OperatorConsoleTests {
    static func json(_ reply: LiveGateway.Reply) throws -> Any {
        try JSONSerialization.jsonObject(with: Data(reply.body.utf8))
    }

    @Test func operatorsSeeTheFunnelSessionsAppsAndRefusalsOthersNothing() async throws {
        try await ProxyTests.withProxy { gateway, _ in
            let alice = try await ProxyTests.signedIn(gateway, as: "alice")
            let olive = try await ProxyTests.signedIn(gateway, as: "olive")  // the development operator
            for _ in 0..<3 { #expect(try await gateway.get("/apps/echo/echo/x", cookies: alice).status == 200) }
            #expect(try await gateway.get("/apps/down/", cookies: alice).status == 502)

            // Not an operator: the page and every twin refuse, with no figure in them.
            let refused = try await gateway.get(Paths.operatorPrefix, cookies: alice, headers: [("Accept", "text/html")])
            #expect(refused.status == 403 && refused.body.contains("This page is for operators") && !refused.body.contains("funnel-chart"))
            for twin in ["/funnel/days", "/sessions", "/apps", "/refusals", "/funnel"] {
                let reply = try await gateway.get(Paths.operatorPrefix + twin, cookies: alice, headers: [("Accept", "application/json")])
                #expect(reply.status == 403 && !reply.body.contains("sso_login_success") && !reply.body.contains("echo"), "\(twin)")
            }

            // An operator: the page, and twins with the same figures.
            let page = try await gateway.get(Paths.operatorPrefix, cookies: olive)
            #expect(page.status == 200 && page.body.contains(#"<svg id="funnel-chart""#) && page.body.contains(#"<table id="funnel-table">"#))
            let sessions = try #require(try Self.json(try await gateway.get(Paths.operatorPrefix + "/sessions", cookies: olive)) as? [String: Any])
            #expect(sessions["sessions"] as? Int == 2)
            #expect(page.body.contains(#"<dd id="live-sessions">2</dd>"#))
            let days = try #require(try Self.json(try await gateway.get(Paths.operatorFunnel + "/days", cookies: olive)) as? [[String: Any]])
            #expect(days.count == 7 && days.last?["sso_login_success"] as? Int == 2)
            let today = try #require(days.last?["day"] as? String)
            #expect(page.body.contains(#"<th scope="row">\#(today)</th><td>2</td>"#))
            let apps = try #require(try Self.json(try await gateway.get(Paths.operatorPrefix + "/apps", cookies: olive)) as? [[String: Any]])
            let echo = try #require(apps.first { $0["slug"] as? String == "echo" })
            #expect(echo["requests"] as? Int == 3 && echo["p50_seconds"] is Double)
            let down = try #require(apps.first { $0["slug"] as? String == "down" })
            #expect((down["failures"] as? [String: Int])?.values.reduce(0, +) == 1)
            #expect(page.body.contains("<th scope=\"row\">Echo</th><td>3</td>"))
            let aliceSub = try #require(DevelopmentAccounts.account(username: "alice")).sub
            let refusals = try #require(try Self.json(try await gateway.get(Paths.operatorPrefix + "/refusals", cookies: olive)) as? [[String: Any]])
            #expect(
                refusals.contains {
                    $0["reason"] as? String == "operator_only" && $0["member"] as? String == aliceSub
                        && $0["path"] as? String == Paths.operatorPrefix && $0["detail"] as? String == "status 403"
                })
            // In words, with the member and the path, and the code beside it.
            #expect(page.body.contains(#"<td title="operator_only">Operators only</td>"#) && page.body.contains(aliceSub))
            // The console's sections in its header, and the way to it in an operator's menu only.
            #expect(page.body.contains(#"id="operator-nav-audit" href="/operator/audit""#))
            #expect(try await gateway.get("/", cookies: olive).body.contains(#"id="member-operator-console" href="/operator""#))
            #expect(!(try await gateway.get("/", cookies: alice).body.contains("member-operator-console")))
            // The funnel report over a window stays where it was, as JSON.
            #expect(try await gateway.get(Paths.operatorFunnel, cookies: olive).body.contains("sso_login_success"))
        }
    }
}
