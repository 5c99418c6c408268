import GatehouseCore
import Hummingbird

/// The portal: the Web Apps tab and the Chats / Calls / Stories tabs.
public struct PortalController: Sendable {
    let catalog: AppCatalog
    let renderer: PageRenderer
    let features: FeaturesConfiguration

    public init(catalog: AppCatalog, renderer: PageRenderer, features: FeaturesConfiguration) {
        self.catalog = catalog
        self.renderer = renderer
        self.features = features
    }

    /// Toasts other pages may ask the web apps to show (`/?toast=…`); anything else is ignored.
    static let toasts: Set = ["registration_failed", "network_error", "app_failed"]
    /// What can end an upgrade flow (`/?toast=registration_failed&reason=…`), each with its own toast text.
    static let registrationFailures: Set = ["code_attempts_exhausted", "storage", "account_changed"]

    public func addRoutes(to group: RouterGroup<SignedInRequestContext>) {
        group.get(RouterPath(stringLiteral: Paths.portal)) { request, context in
            let query = request.uri.queryParameters
            return try self.webApps(context, toast: query.get("toast"), reason: query.get("reason"))
        }
        group.get(RouterPath(stringLiteral: Paths.openPrefix + "/:slug")) { _, context in
            try self.loading(context.parameters.require("slug"), context)
        }
        for tab in [FeatureTab.chats, .calls, .stories] {
            group.get(RouterPath(stringLiteral: tab.path)) { _, context in try self.feature(tab, context) }
        }
    }

    func webApps(_ context: SignedInRequestContext, toast: String? = nil, reason: String? = nil) throws -> Response {
        let session = context.session
        let listed = catalog.listedApps(for: session.identity, level: session.level)
        let appValues: [[String: Any]] = listed.map { app in
            var values: [String: Any] = [
                "slug": app.slug, "name": app.name, "href": Paths.open(app.slug),
                "label": renderer.strings.text("portal_open_app", ["name": app.name]),
            ]
            let icon = AppIcon(app)
            values["image"] = icon.image
            values["monogram"] = icon.monogram
            values["tone"] = icon.tone
            return values
        }
        return try renderer.page(
            "portal", title: renderer.strings["portal_title"],
            values(.webApps, session) { values in
                values["apps"] = appValues
                values["hasApps"] = !appValues.isEmpty
                // At level `sso` the web apps offer the upgrade too, not only the chat tabs.
                if session.level == .sso { values["upgradeURL"] = Paths.upgradeEntry(from: "portal", returnTo: Paths.portal) }
                guard let toast, Self.toasts.contains(toast) else { return }
                values["toast"] = renderer.strings["toast_\(toast)"]
                guard toast == "registration_failed" else { return }
                // What failed, and the way to start again (the flow's own rules say when a new code can be sent).
                if let reason, Self.registrationFailures.contains(reason) {
                    values["toast"] = renderer.strings["toast_registration_failed_\(reason)"]
                }
                values["toastAction"] = [
                    "url": Paths.upgradeEntry(from: "portal", returnTo: Paths.portal), "label": renderer.strings["toast_try_again"],
                ]
            })
    }

    /// "Loading <app>" at once while the browser goes on to the app (replacing this page in the history), and, if
    /// the app is slow, the offer to keep waiting or go back. Only for an app the member's roles and groups let them
    /// see (a registered-only app too: its own address then answers with the onboarding prompt); others do not
    /// exist here, so that guessing slugs learns no app's name.
    func loading(_ slug: String, _ context: SignedInRequestContext) throws -> Response {
        let identity = context.session.identity
        guard let app = catalog.app(slug), !AccessPolicy.visibleApps([app], for: identity, level: context.session.level).isEmpty else {
            throw RequestError.notFound
        }
        let title = renderer.strings.text("loading_app", ["name": app.name])
        return try renderer.page(
            "loading", title: title,
            [
                "loadingTitle": title, "target": catalog.entryURL(for: app),
                "slowText": renderer.strings.text("loading_slow_text", ["name": app.name]),
            ])
    }

    /// Chats, Calls and Stories: the onboarding prompt at level `sso`; the configured app once registered (Calls
    /// first asks audio or video).
    func feature(_ tab: FeatureTab, _ context: SignedInRequestContext) throws -> Response {
        let session = context.session
        let app = self.app(for: tab)
        if session.level == .registered, let app, tab != .calls {
            return Response(status: .seeOther, headers: [.location: catalog.entryURL(for: app), .cacheControl: "no-store"])
        }
        let title = renderer.strings["feature_\(tab.rawValue)_title"]
        return try renderer.page(
            "feature", title: title,
            values(tab, session) { values in
                values["featureTitle"] = title
                values["featureText"] = renderer.strings["feature_\(tab.rawValue)_text"]
                guard session.level == .registered else {
                    values["locked"] = true
                    values["upgradeURL"] = Paths.upgradeEntry(from: tab.rawValue, returnTo: tab.path)
                    values["addHint"] = renderer.strings["feature_add_hint"]
                    return
                }
                guard let app else {
                    values["notConfigured"] = true
                    return
                }
                values["callOptions"] = [
                    "options": CallOption.allCases.map { option in
                        var values: [String: Any] = [
                            "id": "start-\(option.rawValue)-call", "href": FormEncoding.url(catalog.entryURL(for: app), adding: option.parameters),
                            "label": renderer.strings["calls_\(option.rawValue)"], "hint": renderer.strings["calls_\(option.rawValue)_hint"],
                        ]
                        // What only a phone has (an earpiece), said only on touch screens.
                        if let phone = renderer.strings.values["calls_\(option.rawValue)_hint_phone"] { values["phoneHint"] = phone }
                        return values
                    }
                ]
            })
    }

    func app(for tab: FeatureTab) -> AppConfiguration? {
        let slug: String? =
            switch tab {
            case .webApps: nil
            case .chats: features.chats
            case .calls: features.calls
            case .stories: features.stories
            }
        return slug.flatMap(catalog.app)
    }

    /// The member's roles as the member knows them: without the identity provider's own (`offline_access`,
    /// `uma_authorization`, Keycloak's `default-roles-<realm>`), which say nothing about what they may open.
    static func shownRoles(_ roles: [String]) -> [String] {
        roles.filter { role in !["offline_access", "uma_authorization"].contains(role) && !role.hasPrefix("default-roles-") }
    }

    /// What every portal page shows: the member, the tabs and the sign-out form.
    func values(_ current: FeatureTab, _ session: Session, _ customize: (inout [String: Any]) -> Void) -> [String: Any] {
        let roles = Self.shownRoles(session.identity.roles)
        var values: [String: Any] = [
            "memberName": session.identity.displayName,
            "memberInitials": AppIcon.monogram(session.identity.displayName),
            "roles": roles,
            "hasRoles": !roles.isEmpty,
            "csrf": session.csrfToken,
            "tabs": FeatureTab.allCases.map { tab -> [String: Any] in
                [
                    "id": "tab-" + tab.rawValue.replacingOccurrences(of: "_", with: "-"), "href": tab.path,
                    "label": renderer.strings["tab_\(tab.rawValue)"], "current": tab == current,
                ]
            },
        ]
        if let email = session.identity.emailBesideName { values["email"] = email }
        customize(&values)
        return values
    }
}
