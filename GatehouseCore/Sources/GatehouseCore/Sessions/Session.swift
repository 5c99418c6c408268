import Foundation

/// Who the member is, as the identity provider's userinfo said at sign-in.
public struct MemberIdentity: Sendable, Codable, Equatable {
    public var sub: String
    public var name: String?
    public var email: String?
    public var phoneNumber: String?
    public var preferredUsername: String?
    public var roles: [String]
    public var groups: [String]

    public init(
        sub: String, name: String? = nil, email: String? = nil, phoneNumber: String? = nil,
        preferredUsername: String? = nil, roles: [String] = [], groups: [String] = []
    ) {
        self.sub = sub
        self.name = name
        self.email = email
        self.phoneNumber = phoneNumber
        self.preferredUsername = preferredUsername
        self.roles = roles
        self.groups = groups
    }

    /// What the portal calls the member.
    public var displayName: String { name ?? preferredUsername ?? email ?? sub }

    /// The email to show beside `displayName`, unless that already is it.
    public var emailBesideName: String? { email.flatMap { $0 == displayName ? nil : $0 } }
}

/// The tokens the identity provider issued for this session.
public struct TokenSet: Sendable, Codable, Equatable {
    public var idToken: String
    public var accessToken: String
    public var refreshToken: String?
    public var accessTokenExpiresAt: Date?
    /// When the provider issued these (the sign-in, or the last refresh): the member's identity is as current as this.
    /// Missing for sessions stored before it was kept (their creation counts).
    public var obtainedAt: Date?

    public init(idToken: String, accessToken: String, refreshToken: String?, accessTokenExpiresAt: Date?, obtainedAt: Date? = nil) {
        self.idToken = idToken
        self.accessToken = accessToken
        self.refreshToken = refreshToken
        self.accessTokenExpiresAt = accessTokenExpiresAt
        self.obtainedAt = obtainedAt
    }
}

/// A signed-in member's server-side session. The browser holds only the cookie value; `id` is its SHA-256, so a
/// copy of the store cannot be replayed as cookies.
public struct Session: Sendable, Codable, Equatable {
    public var id: String
    public var identity: MemberIdentity
    public var tokens: TokenSet
    public var level: AuthLevel
    public var csrfToken: String
    public var createdAt: Date
    public var lastSeenAt: Date
    public var expiresAt: Date
    /// The provider's session (the ID token's `sid`): a back-channel logout that names it ends this session.
    public var providerSessionID: String?
    /// How the member left the gateway bar on proxied pages; only `SessionStore.setFrame` writes it, so a token
    /// refresh or a touch working on an older copy never undoes the member's choice.
    public var frame: FramePreferences?
    /// Where the member signed in from, for their list of sessions.
    public var device: SessionDevice?
    /// The member's chat account (`@alice:chat.example`) once registered with one: set at sign-in, and by the store
    /// when the upgrade ends or is reset.
    public var chatUserID: String?
    /// How recently, and how, the member last proved who they are: kept beside the level and written only by
    /// `SessionStore.setAssurance`, so that a copy read before a step-up never writes the older proof back. `nil` for a
    /// session stored before it was kept.
    public var assurance: Assurance?
    /// The network the session was last used from (`IPNetwork.of`): a use from another one within minutes is flagged
    /// (`session.bind_to_network` ends the session instead).
    public var network: IPNetwork?
    /// The identity provider the member signed in at (`oidc[].id`); `nil` for a session of the first (or only) one.
    public var provider: String?

    public init(
        id: String, identity: MemberIdentity, tokens: TokenSet, level: AuthLevel, csrfToken: String,
        createdAt: Date, lastSeenAt: Date, expiresAt: Date, providerSessionID: String? = nil
    ) {
        self.id = id
        self.identity = identity
        self.tokens = tokens
        self.level = level
        self.csrfToken = csrfToken
        self.createdAt = createdAt
        self.lastSeenAt = lastSeenAt
        self.expiresAt = expiresAt
        self.providerSessionID = providerSessionID
    }
}

/// What the member last proved, and when, by the gateway's clock: the rules' `auth_age_seconds`, `acr` and
/// `pin_age_seconds` compare these with the time of the request (`PathRules.Requirement`).
public struct Assurance: Sendable, Codable, Equatable {
    /// The member's last authentication at the provider (the ID token's `auth_time`); `nil` when the provider never
    /// said.
    public var authenticatedAt: Date?
    /// The authentication context class the provider reported (`acr`: Keycloak's level of authentication).
    public var acr: String?
    /// When the member last entered their upgrade PIN at the gateway.
    public var pinVerifiedAt: Date?

    public init(authenticatedAt: Date? = nil, acr: String? = nil, pinVerifiedAt: Date? = nil) {
        self.authenticatedAt = authenticatedAt
        self.acr = acr
        self.pinVerifiedAt = pinVerifiedAt
    }

    /// Whether `date` is no more than `seconds` before `now`.
    public static func isRecent(_ date: Date?, within seconds: Int, now: Date) -> Bool {
        guard let date else { return false }
        return now.timeIntervalSince(date) <= TimeInterval(seconds)
    }
}

/// The browser a session was signed in from: its user agent (at most 256 characters) and the client's address.
public struct SessionDevice: Sendable, Codable, Equatable {
    public var userAgent: String?
    public var address: String?

    public init(userAgent: String?, address: String?) {
        self.userAgent = userAgent.map { String($0.prefix(256)) }
        self.address = address
    }

    /// The browser and the system, as a member recognizes them ("Firefox", "Android"), read from the user agent.
    public var summary: (browser: String?, system: String?) {
        guard let agent = userAgent else { return (nil, nil) }
        // Order matters: Edge and Opera say "Chrome", Chrome says "Safari", Android says "Linux".
        let browsers = [("Edg/", "Edge"), ("OPR/", "Opera"), ("Firefox/", "Firefox"), ("Chrome/", "Chrome"), ("Safari/", "Safari")]
        let systems = [
            ("Android", "Android"), ("iPhone", "iOS"), ("iPad", "iPadOS"), ("Windows", "Windows"), ("Mac OS X", "macOS"), ("CrOS", "ChromeOS"),
            ("Linux", "Linux"),
        ]
        return (browsers.first { agent.contains($0.0) }?.1, systems.first { agent.contains($0.0) }?.1)
    }
}

/// A session as its member's pages name it (to end it): a hash of its id, never the id that finds it in the store.
public enum SessionHandle {
    public static func of(_ sessionID: String) -> String {
        String(TokenHash.hex("gatehouse-session-handle:" + sessionID).prefix(20))
    }
}

/// The member's choices about how the gateway shows itself (the frame around apps, the language of its pages), kept
/// for the session (every tab, every app host). A choice the member never made is `nil`; a value with only some
/// choices set is a change to merge (`SessionStore.setFrame`).
public struct FramePreferences: Sendable, Codable, Equatable {
    /// The gateway bar folded into its handle.
    public var barCollapsed: Bool?
    /// The upgrade banner in the bar dismissed: a small "Add Features" entry stays.
    public var bannerDismissed: Bool?
    /// The language the member chose for the gateway's pages, the bar and the banner (`en`, `de`, `ar`).
    public var language: String?

    public init(barCollapsed: Bool? = nil, bannerDismissed: Bool? = nil, language: String? = nil) {
        self.barCollapsed = barCollapsed
        self.bannerDismissed = bannerDismissed
        self.language = language
    }
}
