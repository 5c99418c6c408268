import Foundation
import GatehouseCore

public struct AppConfiguration: Sendable, Equatable {
    public enum Mount: String, Sendable, CaseIterable {
        case path
        case host
        /// Behind the organization's own ingress, which asks `/auth/verify` (forward-auth): `upstream` is the app's
        /// public URL, and the gateway is not in its path.
        case external
    }
    public var slug: String
    public var name: String
    /// One line on the portal's tile: what the app is for.
    public var description: String?
    public var icon: String?
    public var upstream: URL
    public var minimumLevel: AuthLevel
    public var requiredRoles: [String]
    public var requiredGroups: [String]
    public var mount: Mount
    /// Where the gateway bar sits on this app's pages (`apps[].gateway_bar`).
    public var gatewayBar: BarPlacement
    /// What of the browser's request, beyond what browsers send anyway, reaches this app, and how the gateway tells
    /// it who the member is.
    public var headers: AppHeaderConfiguration
    /// TLS towards an https app: the authorities its certificate is checked against, and a client certificate.
    public var tls: AppTLSConfiguration?
    /// Rules per path, checked before the app's own requirements (`apps[].rules`, `apps[].case_insensitive_paths`).
    public var rules: PathRules
    /// The Content-Security-Policy of this app's pages (`apps[].content_security_policy`).
    public var contentSecurityPolicy: PolicyMode
    /// Cookies of the app's that its own scripts read (double-submit CSRF tokens), mirrored to the browser.
    public var clientCookies: [String]
    /// How much of the app's pages the gateway rewrites (`apps[].rewrite`).
    public var rewrite: RewriteProfile
    /// On a path mount: whether the app gets its paths without the mount's prefix (`true`, the default) or with it
    /// (an app told its prefix, served under `/apps/<slug>/` on its own host too).
    public var stripPrefix: Bool
    /// The powerful browser features this app's pages may use (`apps[].permissions`: `camera`, `microphone`, …; see
    /// `PermissionsPolicy`); none unless named.
    public var permissions: [String]
    /// This app's own, shorter limits on a session (`apps[].session`).
    public var sessionLimits: AppSessionLimits
    /// How long a description may be: one line on a tile.
    public static let descriptionLimit = 120

    /// Whether `text` can be a slug read back from a store or a form (1 to 40 of a–z, 0–9 and `-`): nothing else is
    /// taken for one.
    static func isSlug(_ text: String) -> Bool {
        (1...40).contains(text.utf8.count) && text.utf8.allSatisfy { (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2D }
    }

    public init(
        slug: String, name: String, description: String? = nil, icon: String? = nil, upstream: URL, minimumLevel: AuthLevel = .sso,
        requiredRoles: [String] = [], requiredGroups: [String] = [], mount: Mount = .path, gatewayBar: BarPlacement = .automatic,
        headers: AppHeaderConfiguration = .init(), tls: AppTLSConfiguration? = nil, rules: PathRules = .init(),
        contentSecurityPolicy: PolicyMode = .merge, clientCookies: [String] = Self.csrfCookieNames, rewrite: RewriteProfile = .full, stripPrefix: Bool = true,
        permissions: [String] = [], sessionLimits: AppSessionLimits = .init()
    ) {
        self.sessionLimits = sessionLimits
        self.permissions = permissions
        self.contentSecurityPolicy = contentSecurityPolicy
        self.clientCookies = clientCookies
        self.rewrite = rewrite
        self.stripPrefix = stripPrefix
        self.slug = slug
        self.name = name
        self.description = description
        self.icon = icon
        self.upstream = upstream
        self.minimumLevel = minimumLevel
        self.requiredRoles = requiredRoles
        self.requiredGroups = requiredGroups
        self.mount = mount
        self.gatewayBar = gatewayBar
        self.headers = headers
        self.tls = tls
        self.rules = rules
    }
}

/// An app's own limits on the sessions that open it (`apps[].session`), shorter than the gateway's: past them the
/// member signs in at the provider again for this app, and keeps their session for the others.
public struct AppSessionLimits: Sendable, Equatable {
    /// The member's last authentication (or, when the provider never said when, the sign-in) no older than this.
    public var maxAgeSeconds: Int?
    /// No pause longer than this in the member's activity (in any app) since they last signed in.
    public var idleSeconds: Int?

    public init(maxAgeSeconds: Int? = nil, idleSeconds: Int? = nil) {
        self.maxAgeSeconds = maxAgeSeconds
        self.idleSeconds = idleSeconds
    }

    /// The sign-in these limits ask of `session` at `moment`, or `nil` when it is within them.
    public func lacking(_ session: Session, at moment: AccessMoment) -> PathRules.Lack? {
        guard moment.checksFreshness else { return nil }
        let authenticatedAt = session.assurance?.authenticatedAt ?? session.createdAt
        if let maxAgeSeconds, !Assurance.isRecent(authenticatedAt, within: maxAgeSeconds, now: moment.now) {
            return .recentSignIn(.init(maxAge: maxAgeSeconds))
        }
        // A sign-in since the pause began ends it.
        if let idleSeconds, moment.idle > TimeInterval(idleSeconds), !Assurance.isRecent(authenticatedAt, within: idleSeconds, now: moment.now) {
            return .recentSignIn(.init(maxAge: idleSeconds))
        }
        return nil
    }
}

extension AppConfiguration {
    /// Where the bar sits: at the top (room kept above the page), at the bottom (for an app whose own bar is fixed at
    /// the top), folded into its handle (an app with its own full-screen interface), or at the top until the bar's
    /// script finds the app's own controls fixed there, then at the bottom.
    public enum BarPlacement: String, Sendable, CaseIterable {
        case automatic = "auto"
        case top
        case bottom
        case handle
    }

    /// `merge`: the gateway's policy beside the app's own (never looser than either); `app`: the app's own only (the
    /// gateway allows its bar in it and adds nothing); or a policy of the operator's that stands in for the gateway's.
    public enum PolicyMode: Sendable, Equatable {
        case merge
        case app
        case custom(String)
    }

    /// `full`: links, forms, redirects, CSS and, on a path mount the app was not told, the script that maps the URLs
    /// its JavaScript builds; `html`: the same without that script; `none`: nothing rewritten (the bar still goes in).
    public enum RewriteProfile: String, Sendable, CaseIterable {
        case full
        case html
        case none
    }

    /// The cookie names `client_cookies: "csrf"` stands for: the double-submit tokens of the common frameworks
    /// (Tornado and Jupyter, Django, Angular and Laravel, Flask-WTF and Rails' `csrf_token`).
    /// `client_cookies: "csrf"`, every app's default: the CSRF cookies of Tornado and Jupyter, Django, Angular and
    /// Laravel, and those whose name carries an id (Syncthing's `CSRF-Token-<id>`).
    public static let csrfCookieNames = ["_xsrf", "csrftoken", "XSRF-TOKEN", "csrf_token", "CSRF-Token-*"]

    /// Whether the app's upstream path is the gateway's (`/apps/<slug>/…`): an app told its prefix, whose pages and
    /// scripts already name the gateway's paths.
    public var isToldItsPrefix: Bool {
        mount == .path && upstream.path(percentEncoded: true).hasPrefix(Paths.app(slug) + "/")
    }

    /// Whether the gateway maps this app's root paths to its mount beyond its HTML (style sheets, the URL shim, stray
    /// root paths): a path mount the app was not told, with rewriting on.
    public var isRewrittenToItsMount: Bool {
        mount == .path && rewrite != .none && !isToldItsPrefix
    }
}

/// Per app: the request headers the gateway passes beyond the browser's ordinary ones, and the identity headers it sets.
public struct AppHeaderConfiguration: Sendable, Equatable {
    /// A claim of the member's identity the gateway can send.
    public enum Claim: String, Sendable, CaseIterable {
        case sub
        case email
        case preferredUsername = "preferred_username"
        case name
        case groups
        case roles
        /// The member's Matrix ID on the chat homeserver, once registered with one (for the chat apps).
        case chatUserID = "chat_user_id"
    }

    /// The header names (any case) the gateway sets, each with the claim it carries.
    public static let defaultIdentity: [String: Claim] = [
        "X-Forwarded-User": .sub, "X-Forwarded-Email": .email, "X-Forwarded-Preferred-Username": .preferredUsername,
        "X-Forwarded-Groups": .groups,
    ]

    /// The browser's `Authorization` header reaches the app (off by default: the gateway, not the browser, says
    /// who the member is).
    public var passAuthorization: Bool
    /// Further request headers a strict app needs from the browser (an app's own CSRF header, say): names, or patterns
    /// with `*` (`X-CSRF-Token-*`).
    public var passHeaders: [String]
    /// Identity headers by name; an app trusting `X-Webauth-User` names it here and gets it from the gateway only.
    public var identity: [String: Claim]
    /// The header that carries the signed identity assertion (`nil`: none for this app).
    public var assertion: String?
    /// The member's access token as `Authorization: Bearer`, to this app only.
    public var passAccessToken: Bool
    /// The app gets only the headers browsers send on their own account and `passHeaders`
    /// (`request_headers: "strict"`), not every header but the gateway's and identity's.
    public var strictRequestHeaders: Bool

    public init(
        passAuthorization: Bool = false, passHeaders: [String] = [], identity: [String: Claim] = Self.defaultIdentity,
        assertion: String? = AssertionsConfiguration.defaultHeader, passAccessToken: Bool = false, strictRequestHeaders: Bool = false
    ) {
        self.strictRequestHeaders = strictRequestHeaders
        self.passAuthorization = passAuthorization
        self.passHeaders = passHeaders
        self.identity = identity
        self.assertion = assertion
        self.passAccessToken = passAccessToken
    }
}
