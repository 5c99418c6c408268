import GatehouseCore
import GatehouseStorage
import HTTPTypes
import Hummingbird
import NIOConcurrencyHelpers
import NIOCore

/// The gateway bar injected after `<body>` into every proxied HTML document: the gateway's name and the way back to
/// Web Apps, a switcher of the member's apps (through their loading pages), the Chats / Calls / Stories entries
/// (locked at level `sso`), the upgrade banner of product §2 at level `sso`, and a control folding the bar into a
/// handle. Its markup lives in a declarative shadow root, so the app's CSS and the bar's do not meet; above the page
/// it takes 40 px, which a style in the page (`media` switched by the bar's script) reserves at the top.
public struct GatewayBar: Sendable {
    /// The header the bar's scripts send with what they ask (`X-Gatehouse-Frame: 1`), which no form and no other
    /// site's page can send: what the bar may change is asked only by the bar.
    static let scriptHeader = HTTPField.Name("X-Gatehouse-Frame")!

    let renderer: PageRenderer
    let catalog: AppCatalog
    /// Which apps are the chat features' (the bar marks the section the member is in).
    let features: FeaturesConfiguration
    /// Whether Chats is the gateway's own chat, whose unread count the bar shows (on the gateway's own host).
    let servesChat: Bool
    /// Who is offered the upgrade (the banner).
    let registration: RegistrationConfiguration
    let events: EventRecorder
    /// The session's limits: the bar warns before the session ends.
    let session: SessionConfiguration
    /// The rendered bar, cut at its per-response placeholders, by the page's base, the member's level and apps,
    /// the app the page belongs to, and the request's language.
    private let renderings = NIOLockedValueBox<[RenderingKey: Segments]>([:])
    /// Each thread's own copies of `renderings` it used, read first (no lock shared by the event loops).
    private let renderingsSeen = ThreadMemo<RenderingKey, Segments>(limit: 256)
    /// Enough for every combination of roles an organization has; past it the cache starts over.
    static let renderingLimit = 1024
    /// The banner's upgrade link up to its way back (which follows percent-encoded), escaped for an attribute.
    static let upgradeEntryStartInAttribute = Array(Paths.upgradeEntry(from: "banner", returnTo: "").replacing("&", with: "&amp;").utf8)

    public init(
        renderer: PageRenderer, catalog: AppCatalog, features: FeaturesConfiguration, registration: RegistrationConfiguration, events: EventRecorder,
        session: SessionConfiguration = .init(), servesChat: Bool = false
    ) {
        self.servesChat = servesChat
        self.session = session
        self.renderer = renderer
        self.catalog = catalog
        self.features = features
        self.registration = registration
        self.events = events
    }

    /// The markup for one response. `gatewayBase` is empty on the gateway's own host and the gateway's origin on an
    /// app host; `returnTo` is where the upgrade flow brings the member back to.
    public func html(nonce: String, session: Session, app: AppConfiguration, returnTo: String, gatewayBase: String) throws -> String {
        String(decoding: try bytes(nonce: nonce, session: session, app: app, returnTo: returnTo, gatewayBase: gatewayBase), as: UTF8.self)
    }

    /// The same markup as the bytes the HTML rewriter injects, put together from the cached rendering.
    func bytes(nonce: String, session: Session, app: AppConfiguration, returnTo: String, gatewayBase: String) throws -> [UInt8] {
        let overlay = app.gatewayBar == .handle
        let collapsed = overlay || session.frame?.barCollapsed == true
        let segments = try segments(session: session, app: app, gatewayBase: gatewayBase)
        var html: [UInt8] = []
        html.reserveCapacity(segments.textBytes + 512)
        for segment in segments.parts {
            switch segment {
            case .text(let text): html += text
            case .nonce: html += nonce.utf8
            case .upgradeURL:
                // `Paths.upgradeEntry(from: "banner", returnTo:)` written into the attribute: the way back is
                // percent-encoded, so only the `&`s before it need escaping.
                for byte in gatewayBase.utf8 {
                    if byte == UInt8(ascii: "&") { html += "&amp;".utf8 } else { html.append(byte) }
                }
                html += Self.upgradeEntryStartInAttribute
                FormEncoding.appendEscaped(ReturnTarget(returnTo)?.path ?? Paths.portal, to: &html)
            case .state:
                // Attributes with values: the bar goes into XHTML documents too, which must stay well-formed XML.
                if collapsed { html += " data-collapsed=\"\"".utf8 }
                if overlay { html += " data-overlay=\"\"".utf8 }
                if session.frame?.bannerDismissed == true { html += " data-banner-dismissed=\"\"".utf8 }
                switch app.gatewayBar {
                case .automatic: html += " data-place=\"auto\"".utf8
                case .bottom: html += " data-place=\"bottom\"".utf8
                case .top, .handle: html += " data-place=\"top\"".utf8
                }
            case .space: html += (collapsed ? "not all" : "screen").utf8  // printed pages keep no room for it
            // Below the page, room for the handle: the end of the page can always be scrolled clear of it.
            case .roomBelow: html += (collapsed ? "screen" : "not all").utf8
            }
        }
        return html
    }

    /// Counts `upgrade_banner_shown` when the bar that went out carried the banner, and records the event once per
    /// member and `shownWindow`: the funnel counts members at each step, and a row per page read would grow the store
    /// by every page view (and cost the proxied page more than the rest of its answer).
    public func recordShown(session: Session) {
        if offersBanner(session), session.frame?.bannerDismissed != true {
            events.recordOnceIn(Self.shownWindow, .upgradeBannerShown, sub: session.identity.sub)
        }
    }

    static let shownWindow = TimeAmount.minutes(10)

    /// The banner: at level `sso`, to members the upgrade is offered to.
    func offersBanner(_ session: Session) -> Bool {
        session.level == .sso && AccessPolicy.mayUpgrade(session.identity, registration: registration)
    }

    enum Placeholder {
        static let nonce = "GATEHOUSE-NONCE"
        static let upgradeURL = "GATEHOUSE-UPGRADE-URL"
        static let state = "GATEHOUSE-STATE"
        static let space = "GATEHOUSE-SPACE"
        static let roomBelow = "GATEHOUSE-ROOM-BELOW"
        static let all: [(String, Segments.Part)] = [
            (nonce, .nonce), (upgradeURL, .upgradeURL), (state, .state), (space, .space), (roomBelow, .roomBelow),
        ]
    }

    /// A rendered bar cut at its per-response places.
    struct Segments: Sendable {
        enum Part: Sendable {
            case text([UInt8])
            case nonce, upgradeURL, state, space, roomBelow
        }

        var parts: [Part] = []
        var textBytes = 0
    }

    /// What a rendering depends on: the member's level, roles and groups decide the apps it lists (`listedApps`) and
    /// whether it carries the banner, so they stand for those in the key, which is then found without working the list out on every page.
    private struct RenderingKey: Hashable {
        let gatewayBase: String
        let level: AuthLevel
        let app: String
        let roles: [String]
        let groups: [String]
        let language: String
    }

    /// The rendered bar as text pieces and placeholders, in order.
    func segments(session: Session, app: AppConfiguration, gatewayBase: String) throws -> Segments {
        let key = RenderingKey(
            gatewayBase: gatewayBase, level: session.level, app: app.slug, roles: session.identity.roles, groups: session.identity.groups,
            language: renderer.languages.current)
        if let cached = renderingsSeen.value(for: key, shared: { renderings.withLockedValue { $0[key] } }) { return cached }
        let listed = catalog.listedApps(for: session.identity, level: session.level)
        var values = values(level: session.level, identity: session.identity, app: app, listed: listed, gatewayBase: gatewayBase)
        values["banner"] = offersBanner(session)
        var rest = try renderer.fragment("bar", values)[...]
        var segments = Segments()
        func text(_ piece: Substring) {
            segments.parts.append(.text(Array(piece.utf8)))
            segments.textBytes += piece.utf8.count
        }
        while let (range, part) = Placeholder.all.compactMap({ name, part in rest.range(of: name).map { ($0, part) } }).min(by: {
            $0.0.lowerBound < $1.0.lowerBound
        }) {
            text(rest[..<range.lowerBound])
            segments.parts.append(part)
            rest = rest[range.upperBound...]
        }
        text(rest)
        renderings.withLockedValue { cache in
            if cache.count >= Self.renderingLimit { cache.removeAll() }
            cache[key] = segments
        }
        renderingsSeen.remember(segments, for: key)
        return segments
    }

    func values(level: AuthLevel, identity: MemberIdentity, app: AppConfiguration, listed: [AppConfiguration], gatewayBase: String) -> [String: Any] {
        let strings = renderer.strings
        let current = AppIcon(app)
        var values: [String: Any] = [
            "nonce": Placeholder.nonce, "upgradeURL": Placeholder.upgradeURL, "state": Placeholder.state, "space": Placeholder.space,
            "roomBelow": Placeholder.roomBelow,
            "style": gatewayBase + renderer.assets.url(for: Paths.barStyle), "script": gatewayBase + renderer.assets.url(for: Paths.barScript),
            "toastsScript": gatewayBase + renderer.assets.url(for: Paths.toastsScript),
            "keeperScript": gatewayBase + renderer.assets.url(for: Paths.barKeeperScript),
            "sessionScript": gatewayBase + renderer.assets.url(for: Paths.sessionScript),
            "idle": session.idleTimeoutSeconds, "warn": session.warningSeconds,
            "portal": gatewayBase + Paths.portal, "signOut": gatewayBase + Paths.signOut,
            "gatewayInitial": strings["gateway_name"].prefix(1).uppercased(),
            "currentName": app.name, "currentMonogram": current.monogram, "currentTone": current.tone,
            "apps": listed.map { listedApp -> [String: Any] in
                let icon = AppIcon(listedApp)
                return [
                    "slug": listedApp.slug, "name": listedApp.name, "href": gatewayBase + Paths.open(listedApp.slug),
                    "monogram": icon.monogram, "tone": icon.tone, "current": listedApp.slug == app.slug,
                ]
            },
            // The section the member is in: the chat feature whose app this is.
            "features": [FeatureTab.chats, .calls, .stories].filter { features.offers($0, to: identity) }.map { tab -> [String: Any] in
                var values: [String: Any] = [
                    "id": tab.rawValue, "href": gatewayBase + tab.path, "label": strings["tab_\(tab.rawValue)"], "locked": level == .sso,
                    "current": features.slug(for: tab) == app.slug,
                ]
                // The unread count, asked by the bar's script of the page's own host: the gateway's, or an app host's,
                // which answers on the session's grant there.
                if tab == .chats, servesChat, level == .registered, gatewayBase.isEmpty || app.mount == .host { values["unread"] = Paths.chatUnread }
                return values
            },
            "sso": level == .sso, "level": level.rawValue,
        ]
        values["brandStyle"] = renderer.brand.style.map { gatewayBase + renderer.assets.url(for: $0) }
        values["logo"] = renderer.brand.logo.map { gatewayBase + renderer.assets.url(for: $0) }
        // What the member is told live (the count, notifications, a call ringing), heard on the page's own host as the
        // unread count is.
        if servesChat && level == .registered && features.offers(.chats, to: identity) && (gatewayBase.isEmpty || app.mount == .host) {
            values["live"] = Self.live(strings).merging(["script": gatewayBase + renderer.assets.url(for: Paths.liveScript)]) { _, new in new }
        }
        return values
    }

    /// Where a page hears what the member is told live (`LiveFeed`): in the bar and on the gateway's pages, and the
    /// ring's words.
    static func live(_ strings: StringsTable) -> [String: Any] {
        [
            "path": Paths.live, "label": strings["ring_label"], "accept": strings["ring_accept"], "decline": strings["ring_decline"],
            "back": strings["ring_back_to_call"],
        ]
    }

    /// A top-level page load, not XHR/fetch, a frame, a download or a resource.
    public static func isDocumentNavigation(method: HTTPRequest.Method, headers: HTTPFields) -> Bool {
        if let destination = headers[fetchDestination] { return destination == "document" }
        // Browsers without Fetch Metadata: a GET that accepts HTML and is not marked as script-initiated.
        return method == .get && headers[.accept]?.containsBytes(of: "text/html") == true && headers[requestedWith] == nil
    }

    static let fetchDestination = HTTPField.Name("Sec-Fetch-Dest")!
    static let requestedWith = HTTPField.Name("X-Requested-With")!
}
