import Foundation
import GatehouseCore
import GatehouseStorage
import HTTPTypes
import Hummingbird

/// The portal: the Web Apps tab and the Chats / Calls / Stories tabs.
public struct PortalController: Sendable {
    let catalog: AppCatalog
    let renderer: PageRenderer
    let features: FeaturesConfiguration
    /// Who is offered the upgrade.
    let registration: RegistrationConfiguration
    /// What a registered member chose (their username and phone number), for the account menu.
    let registrations: any RegistrationStore
    /// What is remembered of members between sessions: the apps they opened last.
    let members: any MemberStore
    /// Whether the gateway serves its own chat at Chats (`ChatController` has the route then).
    let servesChat: Bool
    /// Whether a member may open the operator console (`GatehouseConfiguration.isOperator`): they find it in their menu.
    let isOperator: @Sendable (MemberIdentity) -> Bool

    public init(
        catalog: AppCatalog, renderer: PageRenderer, features: FeaturesConfiguration, registration: RegistrationConfiguration = .init(),
        registrations: any RegistrationStore, members: any MemberStore, servesChat: Bool = false, isOperator: @escaping @Sendable (MemberIdentity) -> Bool = { _ in false }
    ) {
        self.isOperator = isOperator
        self.catalog = catalog
        self.renderer = renderer
        self.features = features
        self.registration = registration
        self.registrations = registrations
        self.members = members
        self.servesChat = servesChat
    }

    /// From this many apps on, the web apps can be filtered by typing and list the recently used first.
    static let manyApps = 7

    /// Toasts other pages may ask the web apps to show (`/?toast=…`); anything else is ignored.
    static let toasts: Set = ["registration_failed", "registration_cancelled", "network_error", "app_failed"]
    /// What can end an upgrade flow (`/?toast=registration_failed&reason=…`), each with its own toast text.
    static let registrationFailures: Set = ["code_attempts_exhausted", "storage", "account_changed"]

    public func addRoutes(to group: RouterGroup<SignedInRequestContext>) {
        group.get(RouterPath(stringLiteral: Paths.portal)) { request, context in
            let query = request.uri.queryParameters
            return try await self.webApps(context, toast: query.get("toast"), reason: query.get("reason"))
        }
        group.get(RouterPath(stringLiteral: Paths.openPrefix + "/:slug")) { _, context in
            try await self.loading(context.parameters.require("slug"), context)
        }
        for tab in [FeatureTab.chats, .calls, .stories] where !servesChat {
            group.get(RouterPath(stringLiteral: tab.path)) { request, context in
                try await self.feature(tab, context, toast: request.uri.queryParameters.get("toast"))
            }
        }
    }

    func webApps(_ context: SignedInRequestContext, toast: String? = nil, reason: String? = nil) async throws -> Response {
        let session = context.session
        let listed = catalog.listedApps(for: session.identity, level: session.level)
        let isMany = listed.count >= Self.manyApps
        // Many apps: the recently used first (those the member may still see), then the others in the catalog's order.
        let recent = isMany ? try await RecentApps(slugs: members.recentApps(account: session.identity.sub)) : RecentApps()
        let recentApps = recent.slugs.compactMap { slug in listed.first { $0.slug == slug } }
        let otherApps = listed.filter { app in !recentApps.contains { $0.slug == app.slug } }
        return try renderer.page(
            "portal", title: renderer.strings["portal_title"],
            await values(.webApps, session) { values in
                values["recentApps"] = recentApps.map { Self.tile($0, renderer: renderer) }
                values["hasRecentApps"] = !recentApps.isEmpty
                values["apps"] = otherApps.map { Self.tile($0, renderer: renderer) }
                values["hasApps"] = !listed.isEmpty
                values["filterable"] = isMany
                // At level `sso` the web apps offer the upgrade too, not only the chat tabs.
                if session.level == .sso, AccessPolicy.mayUpgrade(session.identity, registration: registration) {
                    values["upgradeURL"] = Paths.upgradeEntry(from: "portal", returnTo: Paths.portal)
                }
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

    /// One app's tile on the web apps: its icon, name and one-line description (the console's preview shows it too).
    static func tile(_ app: AppConfiguration, renderer: PageRenderer) -> [String: Any] {
        let icon = AppIcon(app)
        var values: [String: Any] = [
            "slug": app.slug, "name": app.name, "href": Paths.open(app.slug), "label": renderer.strings.text("portal_open_app", ["name": app.name]),
            "monogram": icon.monogram, "tone": icon.tone,
        ]
        // A file of the gateway's by its hashed name (cached for a year); any other path as configured.
        values["image"] = icon.image.map(renderer.assets.url(for:))
        values["description"] = app.description
        return values
    }

    /// "Loading <app>" at once while the browser goes on to the app (replacing this page in the history), and, if
    /// the app is slow, the offer to keep waiting or go back. Only for an app the member's roles and groups let them
    /// see (a registered-only app too: its own address then answers with the onboarding prompt); others do not
    /// exist here, so that guessing slugs learns no app's name. The app goes to the front of the member's recently
    /// used apps.
    func loading(_ slug: String, _ context: SignedInRequestContext) async throws -> Response {
        let identity = context.session.identity
        guard let app = catalog.app(slug) else { throw ProxyError.missing(slug, in: catalog) }
        guard !AccessPolicy.visibleApps([app], for: identity, level: context.session.level).isEmpty else { throw RequestError.notFound }
        let title = renderer.strings.text("loading_app", ["name": app.name])
        let recent = try await RecentApps(slugs: members.recentApps(account: identity.sub))
        try await members.setRecentApps(recent.opening(app.slug).slugs, account: identity.sub, at: Date())
        return try renderer.page(
            "loading", title: title,
            [
                "loadingTitle": title, "target": catalog.entryURL(for: app),
                "slowText": renderer.strings.text("loading_slow_text", ["name": app.name]),
            ])
    }

    /// Chats, Calls and Stories: the onboarding prompt at level `sso`; the configured app once registered (Calls
    /// first asks audio or video).
    func feature(_ tab: FeatureTab, _ context: SignedInRequestContext, toast: String? = nil) async throws -> Response {
        let session = context.session
        let app = self.app(for: tab)
        let offered = features.offers(tab, to: session.identity)
        if offered, session.level == .registered, let app, tab != .calls {
            return Response(status: .seeOther, headers: [.location: catalog.entryURL(for: app), .cacheControl: "no-store"])
        }
        let title = renderer.strings["feature_\(tab.rawValue)_title"]
        return try renderer.page(
            "feature", title: title,
            await values(tab, session) { values in
                values["featureTitle"] = title
                values["featureText"] = renderer.strings["feature_\(tab.rawValue)_text"]
                if toast == "registration_cancelled" { values["toast"] = renderer.strings["toast_registration_cancelled"] }
                // Not the member's (the feature's roles or groups), or the upgrade not offered to them: said plainly,
                // with no way into a flow they could not finish.
                guard offered else {
                    values["notOffered"] = true
                    return
                }
                guard session.level == .registered else {
                    guard AccessPolicy.mayUpgrade(session.identity, registration: registration) else {
                        values["notOffered"] = true
                        return
                    }
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
        features.slug(for: tab).flatMap(catalog.app)
    }

    /// The member's roles as the member knows them: without the identity provider's own (`offline_access`,
    /// `uma_authorization`, Keycloak's `default-roles-<realm>`), which say nothing about what they may open.
    static func shownRoles(_ roles: [String]) -> [String] {
        roles.filter { role in !["offline_access", "uma_authorization"].contains(role) && !role.hasPrefix("default-roles-") }
    }

    /// What every portal page shows: the member, the tabs and the sign-out form.
    func values(_ current: FeatureTab, _ session: Session, _ customize: (inout [String: Any]) -> Void) async throws -> [String: Any] {
        let roles = Self.shownRoles(session.identity.roles)
        var values: [String: Any] = [
            "memberName": session.identity.displayName,
            "memberInitials": AppIcon.monogram(session.identity.displayName),
            "roles": roles,
            "hasRoles": !roles.isEmpty,
            "csrf": session.csrfToken,
            "isOperator": isOperator(session.identity),
            "languages": renderer.languages.choices,
            "languageReturnTo": current.path,
            // A feature that is not the member's has no tab (its address says so, like an upgrade not offered).
            "tabs": FeatureTab.allCases.filter { features.offers($0, to: session.identity) || $0 == current }.map { tab -> [String: Any] in
                var values: [String: Any] = [
                    "id": "tab-" + tab.rawValue.replacingOccurrences(of: "_", with: "-"), "href": tab.path,
                    "label": renderer.strings["tab_\(tab.rawValue)"], "current": tab == current,
                ]
                // The gateway's own chat: its unread count on the tab, kept current by the page's script.
                if tab == .chats, servesChat, session.level == .registered { values["unread"] = Paths.chatUnread }
                return values
            },
        ]
        if let email = session.identity.emailBesideName { values["email"] = email }
        // The gateway's own chat: what the member is told live (the count, notifications, a call ringing) on every page
        // of theirs.
        if servesChat, features.mayUse(.chats, session) { values["live"] = GatewayBar.live(renderer.strings) }
        // After the upgrade, what the member chose: their username and phone number, as people write them.
        if session.level == .registered, let account = try await registrations.account(sub: session.identity.sub) {
            values["username"] = account.username
            values["phone"] = account.phoneNumber?.display
        }
        customize(&values)
        return values
    }
}

extension PortalController: FeatureChrome {}
