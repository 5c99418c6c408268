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
    /// Whether the gateway bar sits on top of this app's pages; off (an app with its own full-screen interface),
    /// only the bar's small floating handle remains.
    public var gatewayBar: Bool
    /// What of the browser's request, beyond what browsers send anyway, reaches this app, and how the gateway tells
    /// it who the member is.
    public var headers: AppHeaderConfiguration
    /// TLS towards an https app: the authorities its certificate is checked against, and a client certificate.
    public var tls: AppTLSConfiguration?
    /// Rules per path, checked before the app's own requirements (`apps[].rules`, `apps[].case_insensitive_paths`).
    public var rules: PathRules
    /// How long a description may be: one line on a tile.
    public static let descriptionLimit = 120

    public init(
        slug: String, name: String, description: String? = nil, icon: String? = nil, upstream: URL, minimumLevel: AuthLevel = .sso,
        requiredRoles: [String] = [], requiredGroups: [String] = [], mount: Mount = .path, gatewayBar: Bool = true,
        headers: AppHeaderConfiguration = .init(), tls: AppTLSConfiguration? = nil, rules: PathRules = .init()
    ) {
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
    }

    /// The header names (any case) the gateway sets, each with the claim it carries.
    public static let defaultIdentity: [String: Claim] = [
        "X-Forwarded-User": .sub, "X-Forwarded-Email": .email, "X-Forwarded-Preferred-Username": .preferredUsername,
        "X-Forwarded-Groups": .groups,
    ]

    /// The browser's `Authorization` header reaches the app (off by default: the gateway, not the browser, says
    /// who the member is).
    public var passAuthorization: Bool
    /// Further request headers the app needs from the browser (an app's own CSRF header, say).
    public var passHeaders: [String]
    /// Identity headers by name; an app trusting `X-Webauth-User` names it here and gets it from the gateway only.
    public var identity: [String: Claim]
    /// The header that carries the signed identity assertion (`nil`: none for this app).
    public var assertion: String?
    /// The member's access token as `Authorization: Bearer`, to this app only.
    public var passAccessToken: Bool

    public init(
        passAuthorization: Bool = false, passHeaders: [String] = [], identity: [String: Claim] = Self.defaultIdentity,
        assertion: String? = AssertionsConfiguration.defaultHeader, passAccessToken: Bool = false
    ) {
        self.passAuthorization = passAuthorization
        self.passHeaders = passHeaders
        self.identity = identity
        self.assertion = assertion
        self.passAccessToken = passAccessToken
    }
}
