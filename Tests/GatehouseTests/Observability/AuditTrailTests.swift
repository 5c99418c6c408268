import Foundation
import GatehouseCore
import Testing

@testable import Gatehouse

/// The audit trail over real sockets: a member's first request to an app in a session, every refusal with member,
/// app, path and reason (the data plane's allowlist blocks too), sessions and operators' changes, in the store the
/// console filters and as JSON lines in `audit.file`.
@Suite(.serialized) struct AuditTrailTests {
    static let alice = DevelopmentAccounts.account(username: "alice")!.sub

    /// The JSON lines of `file`, once `count` of them are there (the writer is a thread of its own).
    static func lines(_ file: String, atLeast count: Int) async throws -> [[String: String]] {
        for _ in 0..<100 {
            let text = (try? String(contentsOfFile: file, encoding: .utf8)) ?? ""
            let lines = try text.split(separator: "\n").map { line in
                try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String])
            }
            if lines.count >= count { return lines }
            try await Task.sleep(for: .milliseconds(50))
        }
        Issue.record("fewer than \(count) lines in the audit file")
        return []
    }

    @Test func opensRefusalsSessionsAndChangesReachTheStoreTheFileAndTheConsole() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("audit-\(UUID().uuidString).jsonl").path
        defer { try? FileManager.default.removeItem(atPath: file) }
        try await ProxyTests.withProxy(configure: { $0.audit.file = file }) { gateway, _ in
            let alice = try await ProxyTests.signedIn(gateway, as: "alice")
            let olive = try await ProxyTests.signedIn(gateway, as: "olive")
            for index in 0..<3 { #expect(try await gateway.get("/apps/echo/echo/\(index)?token=secret", cookies: alice).status == 200) }
            #expect(try await gateway.get("/apps/admin/", cookies: alice).status == 403)
            // An app's redirect off the allowlist, answered by the data plane.
            let served = gateway.servedByDataPlane("echo")
            #expect(try await gateway.get("/apps/echo/redirect?to=https://evil.example/steal", cookies: alice).status == 403)
            #expect(gateway.servedByDataPlane("echo") == served + 1)
            var read = gateway.configuration
            read.apps.removeAll { $0.slug == "down" }
            #expect(await gateway.built.reloads.apply(read) == .applied(keptUntilRestart: []))

            let json = try #require(
                try JSONSerialization.jsonObject(
                    with: Data(try await gateway.get("\(Paths.operatorAudit)?member=\(Self.alice)", cookies: olive, headers: [("Accept", "application/json")]).body.utf8))
                    as? [[String: String]])
            let actions = json.map { [$0["action"], $0["app"], $0["path"], $0["reason"]].map { $0 ?? "" } }
            #expect(
                actions == [
                    ["refused", "echo", "/apps/echo/redirect", "redirect_outside_allowlist"],
                    ["refused", "admin", "/apps/admin/", "app_not_allowed:admin"],
                    ["app_opened", "echo", "/echo/0", ""],
                    ["signed_in", "", "", "sso"],
                ], "\(actions)")
            #expect(json.allSatisfy { $0["member"] == Self.alice })
            let changes = try #require(
                try JSONSerialization.jsonObject(
                    with: Data(try await gateway.get("\(Paths.operatorAudit)?action=operator_change", cookies: olive, headers: [("Accept", "application/json")]).body.utf8))
                    as? [[String: String]])
            #expect(changes.first?["reason"] == "configuration_reloaded" && changes.first?["detail"] == "apps removed: down", "\(changes)")

            // The page: the same, in words, filtered by app and day; a day that is no date is a clear error.
            let today = OperatorController.Days.dayText(Date())
            let page = try await gateway.get("\(Paths.operatorAudit)?app=admin&day=\(today)", cookies: olive)
            #expect(page.status == 200 && page.body.contains(#"<td title="app_not_allowed:admin">The member"#))
            // The member as people know her (the name she signed in with), beside the subject id.
            #expect(page.body.contains(#"<bdi class="member-name">Alice Archer</bdi><bdi class="member-subject">\#(Self.alice)</bdi>"#))
            #expect(page.body.contains(#"<tr data-action="refused">"#) && !page.body.contains(#"data-action="app_opened""#))
            let yesterday = OperatorController.Days.dayText(Date().addingTimeInterval(-86_400))
            #expect(try await gateway.get("\(Paths.operatorAudit)?app=admin&day=\(yesterday)", cookies: olive).body.contains(#"id="no-audit-records""#))
            let bad = try await gateway.get("\(Paths.operatorAudit)?day=yesterday", cookies: olive, headers: [("Accept", "application/json")])
            #expect(bad.status == 400 && bad.body.contains(#""field":"day""#) && bad.body.contains("2026-11-27"))
            let badPage = try await gateway.get("\(Paths.operatorAudit)?action=everything", cookies: olive)
            #expect(badPage.status == 400 && badPage.body.contains(#"id="audit-filter-problem""#) && badPage.body.contains("Choose an action"))
            #expect(try await gateway.get(Paths.operatorAudit, cookies: alice).status == 403)

            // The file: one JSON object per line, the same records, never a query.
            let lines = try await Self.lines(file, atLeast: 7)
            #expect(lines.contains { $0["action"] == "app_opened" && $0["member"] == Self.alice && $0["app"] == "echo" && $0["path"] == "/echo/0" })
            #expect(lines.contains { $0["action"] == "refused" && $0["reason"] == "redirect_outside_allowlist" && $0["member"] == Self.alice })
            #expect(lines.contains { $0["action"] == "operator_change" && $0["reason"] == "configuration_reloaded" })
            #expect(lines.allSatisfy { $0["time"]?.hasSuffix("Z") == true } && !lines.contains { $0.values.contains { $0.contains("secret") } })
        }
    }
}
