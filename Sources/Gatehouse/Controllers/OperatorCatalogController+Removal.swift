import Foundation
import GatehouseCore
import GatehouseStorage
import Hummingbird

/// Removing an app of the console: asked first (what members lose), then undone from the list for a while after,
/// from the entry the audit trail kept of it; and the warning about an upstream that does not serve.
extension OperatorCatalogController {
    /// How long after a removal the list offers its undo.
    static let undoWindow: TimeInterval = 15 * 60

    /// "Remove Team Notes?": what members lose, with the removal and the way back.
    func removalPage(_ app: StoredApp, context: SignedInRequestContext) throws -> Response {
        let strings = renderer.strings
        let name = (CatalogForm.parse(app.entry) as? [String: Any])?["name"] as? String ?? app.slug
        return try renderer.page(
            "operator-catalog-remove", title: strings.text("operator_apps_remove_title", ["app": name]),
            [
                "nav": OperatorNavigation.items(current: .catalog, strings: strings), "csrf": context.session.csrfToken,
                "heading": strings.text("operator_apps_remove_title", ["app": name]),
                "text": strings.text("operator_apps_remove_text", ["app": name]),
                "confirmLabel": strings.text("operator_apps_remove_confirm", ["app": name]),
                "slug": app.slug, "version": app.version,
            ])
    }

    /// Adds back the app removed last under `slug`, as it was (served or not), if that was within `undoWindow` and
    /// its slug is still free; checked as a new app is.
    func restore(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        let posted = try await FormPost.read(request, session: context.session, publicOrigin: configuration.publicOrigin)
        guard let slug = posted["slug"], AppConfiguration.isSlug(slug) else { throw RequestError.badRequest("slug is required") }
        let strings = renderer.strings
        let last = try await trail.records(AuditQuery(app: slug, action: .operatorChange, limit: 1)).first
        guard let last, last.reason == "app_removed", last.at > Date().addingTimeInterval(-Self.undoWindow),
            let removed = last.detail.flatMap(Self.removedEntry), let entry = CatalogForm.parse(removed.entry) as? [String: Any]
        else {
            return try await list(request, context, notice: strings.text("operator_apps_undo_gone", ["app": slug]), status: .conflict)
        }
        var form = CatalogForm(entry: entry, enabled: removed.enabled, version: 0)
        form.version = nil
        let checked = read(form, stored: [])
        guard case .success(let valid) = checked else {
            return try self.form(form, preview: checked.map(\.app), status: .badRequest, context: context)
        }
        let app = StoredApp(slug: slug, entry: CatalogForm.text(valid.entry), enabled: removed.enabled, changedBy: context.session.identity.sub)
        guard let saved = try await catalog.store.save(app, expectedVersion: nil) else {
            return try await list(request, context, notice: strings.text("operator_apps_slug_taken", ["app": slug]), status: .conflict)
        }
        try await applied("restored", before: nil, after: saved, context: context)
        return Self.done("restored", slug: slug)
    }

    /// The entry a removal's audit detail kept (`before: enabled {…}; after: none`).
    static func removedEntry(_ detail: String) -> (entry: String, enabled: Bool)? {
        let prefix = "before: ", suffix = "; after: none"
        guard detail.hasPrefix(prefix), detail.hasSuffix(suffix) else { return nil }
        let before = detail.dropFirst(prefix.count).dropLast(suffix.count)
        for (word, enabled) in [("enabled ", true), ("disabled ", false)] where before.hasPrefix(word) {
            return (String(before.dropFirst(word.count)), enabled)
        }
        return nil
    }

    /// The upstream a stored app's entry names.
    static func upstream(of app: StoredApp) -> URL? {
        ((CatalogForm.parse(app.entry) as? [String: Any])?["upstream"] as? String).flatMap(URL.init(string:))
    }

    /// What the operator is told of an upstream that would serve members no page.
    static func warning(_ outcome: UpstreamProbe.Outcome, upstream: URL, app: String, strings: StringsTable) -> String {
        let what: String
        switch outcome {
        case .answered(let status): what = strings.text("operator_apps_upstream_status", ["status": String(status)])
        case .failed(let reason): what = strings.text("operator_apps_upstream_failed", ["reason": String(reason.prefix(200))])
        }
        return strings.text("operator_apps_upstream_warning", ["upstream": upstream.absoluteString, "what": what, "app": app])
    }
}
