import Foundation
import GatehouseCore
import GatehouseStorage
import Testing

@testable import Gatehouse

/// The console's app catalog over real sockets: operators only; a form checked as the file is (hostile and broken
/// entries refused with their fields, nothing stored); a saved app served at once and audited; an edit from a stale
/// page refused; disable and remove; an app the file's new allowlist no longer allows set aside, not served.
@Suite(.serialized) struct OperatorCatalogTests {
    typealias Member = UpgradeFlowTests.Member

    static func form(_ upstream: EchoUpstream, slug: String = "wiki", version: Int? = nil, _ extra: [(String, String)] = []) -> [(String, String)] {
        let fields: [(String, String)] = [
            ("slug", slug), ("name", "Team Wiki"), ("description", "Where the team writes things down"), ("icon", ""),
            ("upstream", upstream.origin + "/echo/"), ("mount", "path"), ("minimum_level", "sso"), ("required_roles", ""), ("required_groups", ""),
            ("rules", #"[{"paths": ["/secret/*"], "action": "deny"}]"#), ("settings", ""), ("enabled", "on"), ("version", version.map(String.init) ?? ""),
        ]
        return fields.filter { field in !extra.contains { $0.0 == field.0 } } + extra
    }

    @Test func operatorsAddEditDisableAndRemoveAppsServedAtOnce() async throws {
        try await ProxyTests.withProxy { gateway, upstream in
            let olive = try await Member.signIn(gateway, as: "olive")
            let alice = try await Member.signIn(gateway, as: "alice")

            // Not an operator: neither the list nor a save.
            #expect(try await alice.get(Paths.operatorCatalog).status == 403)
            #expect(try await alice.post(Paths.operatorCatalogSave, Self.form(upstream)).status == 403)
            #expect(try await gateway.built.stores.catalog.apps().isEmpty)

            // The file's apps are listed read-only; none of the console's yet.
            let list = try await olive.get(Paths.operatorCatalog)
            #expect(list.status == 200 && list.body.contains(#"<tr data-app="echo">"#) && list.body.contains(#"id="no-console-apps""#))
            #expect(list.body.contains(#"id="operator-nav-catalog" href="/operator/catalog" aria-current="page""#))

            // Refused, each problem at its field, and nothing stored: a slug of the file's, a host outside the
            // allowlist, a bad slug, rules that are not JSON, a setting with a field of its own, an unknown key.
            let hostile: [[(String, String)]] = [
                [("slug", "echo")], [("upstream", "https://evil.example.net/")], [("slug", "Bad Slug")], [("rules", "[{")],
                [("settings", #"{"slug": "x"}"#)], [("settings", #"{"backdoor": true}"#)], [("upstream", "javascript:alert(1)")],
                [("rules", #"[{"paths": ["/x"], "action": "explode"}]"#)],
            ]
            let fields = ["app-slug", "app-upstream", "app-slug", "app-rules", "app-settings", "app-settings", "app-upstream", "app-rules"]
            for (extra, field) in zip(hostile, fields) {
                let reply = try await olive.post(Paths.operatorCatalogSave, Self.form(upstream, extra))
                #expect(reply.status == 400 && reply.body.contains("<a href=\"#\(field)\">"), "\(extra)")
            }
            let json = try await gateway.post(
                Paths.operatorCatalogSave, form: [("csrf", try await olive.csrf())] + Self.form(upstream, [("upstream", "https://evil.example.net/")]),
                cookies: olive.cookies.values, headers: [("Origin", gateway.origin), ("Accept", "application/json")])
            #expect(json.status == 400 && json.body.contains(#""error":"invalid_app""#) && json.body.contains(#""key":"upstream""#))
            // A form from elsewhere, or without the session's token, is refused before it is read.
            #expect(try await olive.post(Paths.operatorCatalogSave, Self.form(upstream), origin: "https://evil.example.net").status == 403)
            #expect(try await olive.post(Paths.operatorCatalogSave, Self.form(upstream), csrf: "forged").status == 403)
            #expect(try await gateway.built.stores.catalog.apps().isEmpty)

            // A preview shows the tile and stores nothing.
            let preview = try await olive.post(Paths.operatorCatalogSave, Self.form(upstream, [("action", "preview")]))
            #expect(preview.status == 200 && preview.body.contains(#"id="app-tile-preview""#) && preview.body.contains(#"data-app="wiki""#))
            #expect(try await gateway.built.stores.catalog.apps().isEmpty)

            // Saved: served at once, with its rules, on the portal too.
            let saved = try await olive.post(Paths.operatorCatalogSave, Self.form(upstream))
            #expect(saved.status == 303 && saved.location == Paths.operatorCatalog + "?done=added&app=wiki")
            #expect(try await alice.get("/apps/wiki/echo/x").status == 200)
            #expect(try await alice.get("/apps/wiki/secret/x").status == 403)
            #expect(try await alice.get("/").body.contains(#"data-app="wiki""#))
            #expect(try await olive.get(Paths.operatorCatalog + "?done=added&app=wiki").body.contains("wiki was added."))

            // An edit from the page read at version 1: the first is saved, the second (still at 1) refused.
            let edit = try await olive.get(Paths.operatorCatalogEdit + "?slug=wiki")
            #expect(edit.status == 200 && edit.body.contains(#"name="version" value="1""#) && edit.body.contains("/secret/*"))
            #expect(try await olive.post(Paths.operatorCatalogSave, Self.form(upstream, version: 1, [("name", "Wiki")])).status == 303)
            let stale = try await olive.post(Paths.operatorCatalogSave, Self.form(upstream, version: 1, [("name", "Old Wiki")]))
            #expect(stale.status == 409 && stale.body.contains(#"id="app-notice""#))
            #expect(try await gateway.built.stores.catalog.app("wiki")?.entry.contains(#""name":"Wiki""#) == true)
            // A second app under a slug taken meanwhile is refused too.
            #expect(try await olive.post(Paths.operatorCatalogSave, Self.form(upstream)).status == 400)

            // Disabled: gone for members at once.
            let disabled = try await olive.post(Paths.operatorCatalogState, [("slug", "wiki"), ("version", "2"), ("action", "disable")])
            #expect(disabled.location == Paths.operatorCatalog + "?done=disabled&app=wiki")
            #expect(try await alice.get("/apps/wiki/echo/x").status == 404)
            #expect(try await olive.post(Paths.operatorCatalogState, [("slug", "wiki"), ("version", "2"), ("action", "enable")]).status == 409)
            #expect(try await olive.post(Paths.operatorCatalogState, [("slug", "wiki"), ("version", "3"), ("action", "enable")]).status == 303)
            #expect(try await alice.get("/apps/wiki/echo/x").status == 200)

            // The file's allowlist no longer holds the app's host: set aside with the reason, not served, the rest is.
            var narrowed = gateway.built.running.foundation.configuration
            narrowed.allowlist = ["elsewhere.example.org"]
            narrowed.apps = []
            #expect(await gateway.built.reloads.apply(narrowed) == .applied(keptUntilRestart: []))
            #expect(try await alice.get("/apps/wiki/echo/x").status == 404)
            let listed = try #require(try OperatorConsoleTests.json(try await olive.get(Paths.operatorCatalog, json: true)) as? [String: Any])
            let wiki = try #require((listed["console_apps"] as? [[String: Any]])?.first)
            #expect(wiki["served"] as? Bool == false && "\(wiki["problems"] ?? "")".contains("outside the allowlist"))

            // The list names who changed it last, beside the subject id.
            let named = try await olive.get(Paths.operatorCatalog)
            #expect(named.body.contains(#"<bdi class="member-name">Olive Operator</bdi>"#))

            // Removed (confirmed), and every change in the audit trail with the operator, the app and the entry before and after.
            let removal = [("slug", "wiki"), ("version", "4"), ("action", "remove")]
            #expect(try await olive.post(Paths.operatorCatalogState, removal + [("confirmed", "1")]).status == 303)
            #expect(try await gateway.built.stores.catalog.apps().isEmpty)
            await gateway.built.running.foundation.audit.queue.flush()
            let records = try await gateway.built.stores.audit.records(AuditQuery(app: "wiki", action: .operatorChange, limit: 20))
            #expect(records.map(\.reason) == ["app_removed", "app_enabled", "app_disabled", "app_changed", "app_added"])
            let oliveSub = try #require(DevelopmentAccounts.account(username: "olive")).sub
            #expect(records.allSatisfy { $0.member == oliveSub })
            #expect(records.last?.detail?.hasPrefix("before: none; after: enabled {") == true)
            #expect(records[1].detail?.contains(#""name":"Wiki""#) == true)
        }
    }

    @Test func removingIsAskedFirstAndCanBeUndone() async throws {
        try await ProxyTests.withProxy { gateway, upstream in
            let olive = try await Member.signIn(gateway, as: "olive")
            let alice = try await Member.signIn(gateway, as: "alice")
            #expect(try await olive.post(Paths.operatorCatalogSave, Self.form(upstream)).status == 303)
            let removal = [("slug", "wiki"), ("version", "1"), ("action", "remove")]

            // A browser's Remove asks first, saying what members lose; nothing is removed yet.
            let asked = try await olive.post(Paths.operatorCatalogState, removal)
            #expect(asked.status == 200 && asked.body.contains("Remove Team Wiki?") && asked.body.contains(#"name="confirmed" value="1""#))
            #expect(asked.body.contains(#"href="/operator/catalog" id="app-remove-keep""#))
            #expect(try await alice.get("/apps/wiki/echo/x").status == 200)

            // Confirmed: gone, and the list offers the undo.
            let removed = try await olive.post(Paths.operatorCatalogState, removal + [("confirmed", "1")])
            #expect(removed.location == Paths.operatorCatalog + "?done=removed&app=wiki")
            #expect(try await alice.get("/apps/wiki/echo/x").status == 404)
            let list = try await olive.get(try #require(removed.location))
            #expect(list.body.contains("wiki was removed.") && list.body.contains(#"id="app-undo""#))

            // Undone: served again as it was, and in the audit trail; a second undo has nothing to restore.
            let undone = try await olive.post(Paths.operatorCatalogRestore, [("slug", "wiki")])
            #expect(undone.location == Paths.operatorCatalog + "?done=restored&app=wiki")
            #expect(try await alice.get("/apps/wiki/echo/x").status == 200)
            #expect(try await alice.get("/apps/wiki/secret/x").status == 403)
            #expect(try await olive.post(Paths.operatorCatalogRestore, [("slug", "wiki")]).status == 409)
            // Neither a member who is not an operator, nor a forged form, restores anything.
            #expect(try await alice.post(Paths.operatorCatalogRestore, [("slug", "wiki")]).status == 403)
            #expect(try await olive.post(Paths.operatorCatalogRestore, [("slug", "wiki")], csrf: "forged").status == 403)
            await gateway.built.running.foundation.audit.queue.flush()
            let records = try await gateway.built.stores.audit.records(AuditQuery(app: "wiki", action: .operatorChange, limit: 20))
            #expect(records.map(\.reason) == ["app_restored", "app_removed", "app_added"])

            // API callers remove at once (they asked for it by name).
            let json = try await gateway.post(
                Paths.operatorCatalogState, form: [("csrf", try await olive.csrf()), ("slug", "wiki"), ("version", "1"), ("action", "remove")],
                cookies: olive.cookies.values, headers: [("Accept", "application/json"), ("Origin", gateway.origin)])
            #expect(json.status == 200 && json.body.contains(#""removed":true"#))
        }
    }

    @Test func anUpstreamThatServesNoPageIsAWarningBeforeItIsSaved() async throws {
        try await ProxyTests.withProxy { gateway, upstream in
            let olive = try await Member.signIn(gateway, as: "olive")
            // Its root answers 404, and a port where nothing listens: each a warning, nothing stored.
            for (address, what) in [(upstream.origin + "/", "it answered 404"), ("http://127.0.0.1:9/", "no answer")] {
                let warned = try await olive.post(Paths.operatorCatalogSave, Self.form(upstream, [("upstream", address)]))
                #expect(warned.status == 422 && warned.body.contains(#"id="upstream-warning""#) && warned.body.contains(what), "\(address)")
                #expect(warned.body.contains(#"id="app-save-anyway""#) && warned.body.contains("value=\"\(address)\""))
                #expect(try await gateway.built.stores.catalog.apps().isEmpty)
            }
            // The operator saves anyway: stored.
            let saved = try await olive.post(Paths.operatorCatalogSave, Self.form(upstream, [("upstream", upstream.origin + "/"), ("action", "save_anyway")]))
            #expect(saved.status == 303)
            #expect(try await gateway.built.stores.catalog.app("wiki") != nil)
            // An edit that keeps the upstream is not asked again.
            #expect(try await olive.post(Paths.operatorCatalogSave, Self.form(upstream, version: 1, [("upstream", upstream.origin + "/"), ("name", "W")])).status == 303)
        }
    }
}
