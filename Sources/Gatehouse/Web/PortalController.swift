import Hummingbird

/// The portal: the Web Apps tab and the Chats / Calls / Stories tabs.
public struct PortalController: Sendable {
    public enum Tab: String, CaseIterable, Sendable {
        case webApps = "web_apps"
        case chats
        case calls
        case stories

        var path: String {
            switch self {
            case .webApps: Paths.portal
            case .chats: Paths.chats
            case .calls: Paths.calls
            case .stories: Paths.stories
            }
        }
    }

    let catalog: AppCatalog
    let renderer: PageRenderer

    public init(catalog: AppCatalog, renderer: PageRenderer) {
        self.catalog = catalog
        self.renderer = renderer
    }

    public func addRoutes(to group: RouterGroup<SignedInRequestContext>) {
        group.get(RouterPath(stringLiteral: Paths.portal)) { _, context in try self.webApps(context) }
        for tab in [Tab.chats, .calls, .stories] {
            group.get(RouterPath(stringLiteral: tab.path)) { _, context in try self.feature(tab, context) }
        }
    }

    func webApps(_ context: SignedInRequestContext) throws -> Response {
        let session = context.session
        let listed = AccessPolicy.visibleApps(catalog.apps.filter { $0.minimumLevel == .sso }, for: session.identity, level: session.level)
        let appValues: [[String: Any]] = listed.map { app in
            [
                "slug": app.slug, "name": app.name, "icon": app.icon ?? String(app.name.prefix(1)),
                "href": catalog.entryURL(for: app), "label": renderer.strings.text("portal_open_app", ["name": app.name]),
            ]
        }
        return try renderer.page(
            "portal", title: renderer.strings["portal_title"],
            values(.webApps, session) { values in
                values["apps"] = appValues
                values["hasApps"] = !appValues.isEmpty
            })
    }

    func feature(_ tab: Tab, _ context: SignedInRequestContext) throws -> Response {
        let session = context.session
        return try renderer.page(
            "feature", title: renderer.strings["feature_\(tab.rawValue)_title"],
            values(tab, session) { values in
                values["featureTitle"] = renderer.strings["feature_\(tab.rawValue)_title"]
                values["featureText"] = renderer.strings["feature_\(tab.rawValue)_text"]
                values["registered"] = session.level == .registered
            })
    }

    /// What every portal page shows: the member, the tabs and the sign-out form.
    func values(_ current: Tab, _ session: Session, _ customize: (inout [String: Any]) -> Void) -> [String: Any] {
        var values: [String: Any] = [
            "memberName": session.identity.displayName,
            "roles": session.identity.roles.joined(separator: ", "),
            "hasRoles": !session.identity.roles.isEmpty,
            "csrf": session.csrfToken,
            "tabs": Tab.allCases.map { tab -> [String: Any] in
                ["href": tab.path, "label": renderer.strings["tab_\(tab.rawValue)"], "current": tab == current]
            },
        ]
        customize(&values)
        return values
    }
}
