import Foundation
import GatehouseCore

/// An HTTP endpoint the gateway POSTs JSON to: the code sender's API or the provisioning webhook.
public struct HTTPEndpointConfiguration: Sendable {
    public var url: URL
    /// The header carrying `authorization` (an API key header for some SMS services).
    public var authorizationHeader: String
    /// Only from the environment or a `_FILE`.
    public var authorization: String?
    public var timeoutSeconds: Int
    /// The authorities its certificate must chain to instead of the system's, and a client certificate (`<prefix>.tls`).
    public var tls: AppTLSConfiguration?

    public static let defaultAuthorizationHeader = "Authorization"
    public static let defaultTimeoutSeconds = 10

    public init(
        url: URL, authorizationHeader: String = defaultAuthorizationHeader, authorization: String? = nil, timeoutSeconds: Int = defaultTimeoutSeconds,
        tls: AppTLSConfiguration? = nil
    ) {
        self.tls = tls
        self.url = url
        self.authorizationHeader = authorizationHeader
        self.authorization = authorization
        self.timeoutSeconds = timeoutSeconds
    }
}

public struct ProvisioningConfiguration: Sendable {
    /// No endpoint: no webhook is called.
    public var endpoint: HTTPEndpointConfiguration?
    public var maximumAttempts: Int
    /// The pause after the first failure; it doubles with every further one, up to an hour.
    public var retryBaseSeconds: Double
    public var pollSeconds: Double

    public init(endpoint: HTTPEndpointConfiguration? = nil, maximumAttempts: Int = 8, retryBaseSeconds: Double = 30, pollSeconds: Double = 5) {
        self.endpoint = endpoint
        self.maximumAttempts = maximumAttempts
        self.retryBaseSeconds = retryBaseSeconds
        self.pollSeconds = pollSeconds
    }
}

/// The homeserver the upgrade makes members' chat accounts on (`chat.*`).
public struct ChatConfiguration: Sendable {
    public enum Backend: String, Sendable, CaseIterable {
        /// Registrations stay in the gateway's own store.
        case none
        /// Accounts on a Synapse homeserver, through its admin API.
        case synapse
    }
    public var backend: Backend
    public var homeserverURL: URL?
    /// The homeserver's `server_name`: the part after the `:` of its Matrix IDs.
    public var serverName: String?
    /// A homeserver admin's access token; only from a file (`chat.admin_token_file`) or the environment.
    public var adminToken: String?
    /// The `idp_id` of the homeserver's own OIDC provider entry for the organization's identity provider: the
    /// `auth_provider` of the link between an account and a member's SSO subject.
    public var authProvider: String
    public var timeoutSeconds: Int
    /// The authorities the homeserver's certificate must chain to instead of the system's (`chat.tls`).
    public var tls: AppTLSConfiguration?
    /// The secret of the homeserver's JWT login (`jwt_config`), with which the gateway holds each registered member's
    /// Matrix session; only from a file (`chat.jwt_secret_file`) or the environment. Without it the gateway serves
    /// no chat of its own.
    public var jwtSecret: String?
    /// The networks a call's ICE candidates may name (`chat.calls.candidate_networks`); empty: any.
    public var callNetworks: [IPNetwork] = []
    /// Whether calls go through the homeserver's TURN server only (`chat.calls.relay_only`): no member's own address
    /// is ever told to the other.
    public var callsRelayOnly = false
    /// How long a story is shown before the gateway deletes it (`chat.stories.lifetime_hours`).
    public var storyLifetime: TimeInterval = 24 * 3600
    /// Web Push to members' browsers when no gateway page is open (`chat.push.*`).
    public var push = PushConfiguration()

    /// Whether the gateway holds members' Matrix sessions and serves its own chat.
    public var servesChat: Bool { backend == .synapse && homeserverURL != nil && serverName != nil && jwtSecret != nil }

    public static let defaultAuthProvider = "oidc"

    public init(
        backend: Backend = .none, homeserverURL: URL? = nil, serverName: String? = nil, adminToken: String? = nil,
        authProvider: String = defaultAuthProvider, timeoutSeconds: Int = HTTPEndpointConfiguration.defaultTimeoutSeconds,
        tls: AppTLSConfiguration? = nil, jwtSecret: String? = nil
    ) {
        self.jwtSecret = jwtSecret
        self.backend = backend
        self.homeserverURL = homeserverURL
        self.serverName = serverName
        self.adminToken = adminToken
        self.authProvider = authProvider
        self.timeoutSeconds = timeoutSeconds
        self.tls = tls
    }
}

/// Web Push (`chat.push.*`): whether members may turn it on, where the homeserver reaches the gateway's push
/// gateway, the push services the gateway may send to, and whom those services may contact.
public struct PushConfiguration: Sendable {
    /// `chat.push.enabled`.
    public var enabled = true
    /// `chat.push.gateway_url`: the push gateway as the homeserver reaches it (`nil`: on the public origin).
    public var gatewayURL: String?
    /// `chat.push.services`: the browsers' own push services unless the operator names others.
    public var services = PushServices(PushServices.browsers) ?? PushServices([])!
    /// `chat.push.contact`: the VAPID `sub` (a `mailto:` or `https:` URL; `nil`: the public origin).
    public var contact: String?

    public init() {}
}

/// The upgrade flow (product §5).
public struct RegistrationConfiguration: Sendable {
    public enum SenderKind: String, Sendable, CaseIterable {
        /// The log and the development inbox page.
        case log
        /// POST to `codeSenderEndpoint`.
        case http
    }
    /// `nil` outside development mode is a configuration problem: codes must go somewhere real.
    public var codeSender: SenderKind?
    public var codeSenderEndpoint: HTTPEndpointConfiguration?
    public var rules: VerificationRules
    public var provisioning: ProvisioningConfiguration
    public var pinBcryptCost: Int
    /// Whether members may upgrade at all (`registration.enabled`).
    public var enabled: Bool
    /// Members need one of these roles, and one of these groups, to be offered the upgrade (empty: no condition).
    public var requiredRoles: [String]
    public var requiredGroups: [String]
    /// A claim (true, or a non-empty value) or a role that makes a member `registered` at sign-in without the flow:
    /// for organizations whose members' chat accounts are made elsewhere.
    public var registeredClaim: String?
    /// Where registered members land after signing in without a place to go (`registration.registered_landing`): a
    /// section (`chats` by default, `web_apps` for the web apps) or an app's slug.
    public var registeredLanding: String
    public var chat: ChatConfiguration

    public static let defaultRegisteredLanding = FeatureTab.chats.rawValue

    /// The path `registeredLanding` names.
    public var registeredLandingPath: String {
        FeatureTab(rawValue: registeredLanding)?.path ?? Paths.open(registeredLanding)
    }

    public init(
        codeSender: SenderKind? = .log, codeSenderEndpoint: HTTPEndpointConfiguration? = nil, rules: VerificationRules = .init(),
        provisioning: ProvisioningConfiguration = .init(), pinBcryptCost: Int = 12, enabled: Bool = true, requiredRoles: [String] = [],
        requiredGroups: [String] = [], registeredClaim: String? = nil, registeredLanding: String = defaultRegisteredLanding,
        chat: ChatConfiguration = .init()
    ) {
        self.registeredLanding = registeredLanding
        self.codeSender = codeSender
        self.codeSenderEndpoint = codeSenderEndpoint
        self.rules = rules
        self.provisioning = provisioning
        self.pinBcryptCost = pinBcryptCost
        self.enabled = enabled
        self.requiredRoles = requiredRoles
        self.requiredGroups = requiredGroups
        self.registeredClaim = registeredClaim
        self.chat = chat
    }
}

/// Which apps the Chats, Calls and Stories tabs open for registered members (app slugs).
public struct FeaturesConfiguration: Sendable, Equatable {
    public var chats: String?
    public var calls: String?
    public var stories: String?
    /// Who each feature is for beyond the upgrade (`features.<tab>.required_roles`/`required_groups`); a feature with
    /// none is every registered member's.
    public var audiences: [FeatureTab: FeatureAudience]

    public init(chats: String? = nil, calls: String? = nil, stories: String? = nil, audiences: [FeatureTab: FeatureAudience] = [:]) {
        self.chats = chats
        self.calls = calls
        self.stories = stories
        self.audiences = audiences
    }

    /// Whether `tab` is the member's at all: its tab shows (locked at `sso`) only then.
    public func offers(_ tab: FeatureTab, to identity: MemberIdentity) -> Bool {
        audiences[tab]?.admits(identity) ?? true
    }

    /// Whether the member of `session` may use `tab`'s feature: it is theirs, and they are registered, with a chat
    /// account.
    public func mayUse(_ tab: FeatureTab, _ session: Session) -> Bool {
        tab == .webApps || (offers(tab, to: session.identity) && session.level == .registered && session.chatUserID != nil)
    }

    /// The app behind a chat feature's tab (none behind Web Apps).
    public func slug(for tab: FeatureTab) -> String? {
        switch tab {
        case .webApps: nil
        case .chats: chats
        case .calls: calls
        case .stories: stories
        }
    }
}

/// The roles (every one) and groups (at least one) a chat feature asks of a member, read as an app's requirements are.
public struct FeatureAudience: Sendable, Equatable {
    public var requiredRoles: [String]
    public var requiredGroups: [String]

    public init(requiredRoles: [String] = [], requiredGroups: [String] = []) {
        self.requiredRoles = requiredRoles
        self.requiredGroups = requiredGroups
    }

    public func admits(_ identity: MemberIdentity) -> Bool {
        PathRules.Requirement.meets(requiredRoles: requiredRoles, requiredGroups: requiredGroups, roles: identity.roles, groups: identity.groups)
    }
}
