import Foundation
import GatehouseCore
import GatehouseStorage
import Hummingbird

/// The console's app catalog (`/operator/catalog`, members with `operator.role`): the file's apps, read-only, and the
/// console's own, which operators add, edit, disable and remove. A form is checked as `check-config` checks the file
/// (`StoredAppsReader`), shows the tile as the portal will, and is saved only at the version it was read at; the
/// change applies on this replica before the next page and on the others through the store. Each change is an
/// `operator_change` record of the audit trail, with the entry before and after. JSON for API callers. Before a new
/// upstream is saved it is asked once (`UpstreamProbe`); one that does not answer is a warning the operator saves past
/// or not. A removal is confirmed first and can be undone from the list (`+Removal`).
struct OperatorCatalogController: Sendable {
    let catalog: StoredCatalog
    let audit: AuditTrail
    /// The trail's records (a removed app's entry, for its undo) and who changed the apps last.
    let trail: OperatorAuditController
    let probe: UpstreamProbe
    let renderer: PageRenderer
    /// The running gateway's: the file's apps and the console's served beside them.
    let configuration: GatehouseConfiguration

    func addRoutes(to group: RouterGroup<SignedInRequestContext>) {
        group.get(RouterPath(stringLiteral: Paths.operatorCatalog)) { request, context in
            try await list(request, context, notice: Self.notice(request, strings: renderer.strings))
        }
        group.get(RouterPath(stringLiteral: Paths.operatorCatalogNew)) { _, context in try form(CatalogForm(), context: context) }
        group.get(RouterPath(stringLiteral: Paths.operatorCatalogEdit)) { request, context in
            guard let slug = request.uri.queryParameters.get("slug"), let stored = try await catalog.store.app(slug),
                let entry = CatalogForm.parse(stored.entry) as? [String: Any]
            else { throw RequestError.notFound }
            let form = CatalogForm(entry: entry, enabled: stored.enabled, version: stored.version)
            return try self.form(form, preview: read(form, stored: [stored.slug]).map(\.app), context: context)
        }
        group.post(RouterPath(stringLiteral: Paths.operatorCatalogSave), use: save)
        group.post(RouterPath(stringLiteral: Paths.operatorCatalogState), use: changeState)
        group.post(RouterPath(stringLiteral: Paths.operatorCatalogRestore), use: restore)
    }

    // MARK: - The list

    func list(_ request: Request, _ context: SignedInRequestContext, notice: String?, status: HTTPResponse.Status = .ok) async throws -> Response {
        let stored = try await catalog.store.apps()
        let state = catalog.state
        if ErrorAnswer.wantsJSON(accept: request.headers[.accept]) {
            return try JSONResponse.make(
                [
                    "file_apps": state.fileApps.map { ["slug": $0.slug, "name": $0.name, "upstream": $0.upstream.absoluteString] },
                    "console_apps": stored.map { Self.json($0, setAside: state.setAside[$0.slug]) },
                ], status: status)
        }
        let strings = renderer.strings
        let names = try await ConsoleMemberNames.load(stored.map(\.changedBy), from: trail.members)
        var values: [String: Any] = [
            "nav": OperatorNavigation.items(current: .catalog, strings: strings), "csrf": context.session.csrfToken,
            "fileApps": state.fileApps.map { ["slug": $0.slug, "name": $0.name, "upstream": $0.upstream.absoluteString, "mount": $0.mount.rawValue] },
            "consoleApps": stored.map { names.adding(to: row($0, setAside: state.setAside[$0.slug], strings: strings), subject: $0.changedBy) },
            "hasConsoleApps": !stored.isEmpty,
        ]
        values["notice"] = notice
        // Just removed: the way to take it back.
        let query = request.uri.queryParameters
        if query.get("done") == "removed", let slug = query.get("app"), AppConfiguration.isSlug(slug) { values["undo"] = ["slug": slug] }
        return try renderer.page("operator-catalog", title: strings["operator_apps_title"], status: status, values)
    }

    func row(_ app: StoredApp, setAside: [ConfigurationProblem]?, strings: StringsTable) -> [String: Any] {
        let entry = CatalogForm.parse(app.entry) as? [String: Any] ?? [:]
        let status = !app.enabled ? "disabled" : setAside == nil ? "served" : "set_aside"
        return [
            "slug": app.slug, "name": entry["name"] as? String ?? app.slug, "upstream": entry["upstream"] as? String ?? "",
            "status": strings["operator_apps_status_\(status)"], "statusCode": status, "problems": setAside?.map(\.description) ?? [],
            "version": app.version, "enabled": app.enabled, "changedBy": app.changedBy,
            "changedAt": app.changedAt.formatted(.iso8601), "shownAt": OperatorAuditController.shownTime(app.changedAt),
            "editURL": FormEncoding.url(Paths.operatorCatalogEdit, adding: [("slug", app.slug)]),
        ]
    }

    static func json(_ app: StoredApp, setAside: [ConfigurationProblem]?) -> [String: Any] {
        [
            "slug": app.slug, "entry": CatalogForm.parse(app.entry) ?? [:], "enabled": app.enabled, "version": app.version,
            "changed_by": app.changedBy, "changed_at": app.changedAt.formatted(.iso8601), "served": app.enabled && setAside == nil,
            "problems": (setAside ?? []).map { ["key": $0.keyPath, "message": $0.message] },
        ]
    }

    /// What the last change did (`?done=added&app=wiki`), in words.
    static func notice(_ request: Request, strings: StringsTable) -> String? {
        let query = request.uri.queryParameters
        guard let done = query.get("done"), ["added", "changed", "enabled", "disabled", "removed", "restored"].contains(done), let app = query.get("app") else {
            return nil
        }
        return strings.text("operator_apps_done_\(done)", ["app": String(app.prefix(40))])
    }

    // MARK: - The form

    /// The form's entry read beside the running apps (without the console's app of the same slug, which it replaces).
    func read(_ form: CatalogForm, stored: Set<String>) -> Result<(entry: [String: Any], app: AppConfiguration), ConfigurationError> {
        var beside = configuration
        beside.apps.removeAll { $0.slug == form.slug && stored.contains($0.slug) }
        return form.entry().flatMap { entry in StoredAppsReader.read(entry, beside: beside).map { (entry, $0) } }
    }

    func form(
        _ form: CatalogForm, preview: Result<AppConfiguration, ConfigurationError>? = nil, notice: String? = nil, upstreamWarning: String? = nil,
        status: HTTPResponse.Status = .ok, context: SignedInRequestContext
    ) throws -> Response {
        let strings = renderer.strings
        var values: [String: Any] = [
            "nav": OperatorNavigation.items(current: .catalog, strings: strings), "csrf": context.session.csrfToken,
            "isNew": form.version == nil, "version": form.version.map(String.init) ?? "", "enabled": form.enabled,
            "mounts": AppConfiguration.Mount.allCases.map { ["value": $0.rawValue, "selected": $0.rawValue == form.values["mount"]] },
            "levels": [AuthLevel.sso, .registered].map { ["value": $0.rawValue, "selected": $0.rawValue == form.values["minimum_level"]] },
        ]
        values["notice"] = notice
        values["upstreamWarning"] = upstreamWarning
        for field in CatalogForm.fields { values[field.replacingOccurrences(of: "_", with: "")] = form.values[field] ?? "" }
        switch preview {
        case .success(let app)?:
            values["tile"] = PortalController.tile(app, renderer: renderer)
        case .failure(let error)?:
            values["hasErrors"] = true
            values["errors"] = error.problems.map { ["field": "app-" + CatalogForm.field(of: $0.keyPath).replacingOccurrences(of: "_", with: "-"), "message": $0.description] }
        case nil: break
        }
        let title = strings[form.version == nil ? "operator_apps_new_title" : "operator_apps_edit_title"]
        return try renderer.page("operator-catalog-app", title: title, status: status, values)
    }

    /// Saves the form (or, with `action=preview`, only shows its tile and problems): refused with every problem, or
    /// when the app changed since the form was read.
    func save(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        let posted = try await FormPost.read(request, session: context.session, publicOrigin: configuration.publicOrigin, limit: 64 * 1024)
        let form = CatalogForm(posted: posted)
        let wantsJSON = ErrorAnswer.wantsJSON(accept: request.headers[.accept])
        let before = try await catalog.store.app(form.slug)
        // An edit replaces the console's app of its slug; a new app beside it would take its slug.
        let read = read(form, stored: before != nil && form.version != nil ? [form.slug] : [])
        let preview = read.map(\.app)
        if posted["action"] == "preview" { return try self.form(form, preview: preview, context: context) }
        let entry: [String: Any]
        switch read {
        case .failure(let error):
            if wantsJSON {
                return try JSONResponse.make(
                    ["error": "invalid_app", "problems": error.problems.map { ["key": $0.keyPath, "message": $0.message] }], status: .badRequest)
            }
            return try self.form(form, preview: preview, status: .badRequest, context: context)
        case .success(let read): entry = read.entry
        }
        // A new upstream is asked once; one that members would find no page at is saved only when the operator says so.
        if posted["action"] != "save_anyway", let upstream = (try? read.get().app)?.upstream, before.map({ Self.upstream(of: $0) != upstream }) ?? true {
            let outcome = await probe.probe(upstream)
            if !outcome.isServed {
                let warning = Self.warning(outcome, upstream: upstream, app: form.values["name"] ?? form.slug, strings: renderer.strings)
                if wantsJSON { return try JSONResponse.make(["error": "upstream_not_serving", "message": warning], status: .unprocessableContent) }
                return try self.form(form, preview: preview, upstreamWarning: warning, status: .unprocessableContent, context: context)
            }
        }
        let app = StoredApp(slug: form.slug, entry: CatalogForm.text(entry), enabled: form.enabled, changedBy: context.session.identity.sub)
        guard let saved = try await catalog.store.save(app, expectedVersion: form.version) else {
            let notice = renderer.strings.text(form.version == nil ? "operator_apps_slug_taken" : "operator_apps_stale", ["app": form.slug])
            if wantsJSON { return try JSONResponse.make(["error": "stale_version", "message": notice], status: .conflict) }
            return try self.form(form, preview: preview, notice: notice, status: .conflict, context: context)
        }
        let done = before == nil ? "added" : "changed"
        try await applied(done, before: before, after: saved, context: context)
        if wantsJSON { return try JSONResponse.make(Self.json(saved, setAside: catalog.state.setAside[saved.slug])) }
        return Self.done(done, slug: saved.slug)
    }

    /// `enable`, `disable` or `remove` one of the console's apps, at the version the list showed.
    func changeState(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        let posted = try await FormPost.read(request, session: context.session, publicOrigin: configuration.publicOrigin)
        guard let slug = posted["slug"], let version = posted["version"].flatMap({ Int($0) }), let action = posted["action"],
            ["enable", "disable", "remove"].contains(action)
        else { throw RequestError.badRequest("slug, version and action (enable, disable or remove) are required") }
        guard let before = try await catalog.store.app(slug) else { throw RequestError.notFound }
        let wantsJSON = ErrorAnswer.wantsJSON(accept: request.headers[.accept])
        // A browser's Remove asks first; the confirmation posts again with `confirmed`.
        if action == "remove", !wantsJSON, posted["confirmed"] != "1" { return try removalPage(before, context: context) }
        var after: StoredApp?
        var changed = false
        if action == "remove" {
            changed = try await catalog.store.remove(slug, expectedVersion: version)
        } else {
            var app = before
            app.enabled = action == "enable"
            app.changedBy = context.session.identity.sub
            after = try await catalog.store.save(app, expectedVersion: version)
            changed = after != nil
        }
        guard changed else {
            let notice = renderer.strings.text("operator_apps_stale", ["app": slug])
            return try await list(request, context, notice: notice, status: .conflict)
        }
        let done = action == "remove" ? "removed" : action + "d"
        try await applied(done, before: before, after: after, context: context)
        if wantsJSON {
            return try JSONResponse.make(after.map { Self.json($0, setAside: catalog.state.setAside[$0.slug]) } ?? ["slug": slug, "removed": true])
        }
        return Self.done(done, slug: slug)
    }

    /// The change applied here at once, and written to the audit trail with the entry before and after.
    func applied(_ done: String, before: StoredApp?, after: StoredApp?, context: SignedInRequestContext) async throws {
        await catalog.apply()
        func describe(_ app: StoredApp?) -> String { app.map { "\($0.enabled ? "enabled" : "disabled") \($0.entry)" } ?? "none" }
        audit.record(
            AuditRecord(
                action: .operatorChange, member: context.session.identity.sub, app: after?.slug ?? before?.slug, reason: "app_\(done)",
                detail: "before: \(describe(before)); after: \(describe(after))"))
        context.logger.notice(
            "app catalog changed by an operator",
            metadata: ["app": .string(after?.slug ?? before?.slug ?? ""), "change": .string(done), "operator": .string(context.session.identity.sub)])
    }

    static func done(_ done: String, slug: String) -> Response {
        let location = FormEncoding.url(Paths.operatorCatalog, adding: [("done", done), ("app", slug)])
        return Response(status: .seeOther, headers: [.location: location, .cacheControl: "no-store"])
    }
}
