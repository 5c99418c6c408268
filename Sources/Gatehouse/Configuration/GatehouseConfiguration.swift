import Foundation
import GatehouseCore
import GatehouseStorage

/// The whole typed configuration; every value has a named default (see `ConfigurationLoader` for sources).
public struct GatehouseConfiguration: Sendable {
    public var publicURL: URL
    public var listen: ListenConfiguration
    public var developmentMode: Bool
    /// Development mode starts the demo apps on this loopback port (when the configuration names no apps).
    public var demoAppsPort: Int?
    /// The identity provider members sign in at; with `oidc` as a list, the first of them (whose subjects are the
    /// members' accounts as they are).
    public var oidc: OIDCConfiguration
    /// The list's other providers (`oidc[1]`…), for organizations that merge realms: each with its own button.
    public var otherProviders: [OIDCConfiguration] = []
    public var cookie: CookieConfiguration
    public var session: SessionConfiguration
    public var storage: StorageConfiguration
    public var apps: [AppConfiguration]
    /// The console's apps an operator turned off, by slug, with their names: their addresses say so to members
    /// instead of "not found" (`StoredAppsReader.merge` fills it; a file's app cannot be turned off).
    public var turnedOffApps: [String: String] = [:]
    /// Host-mounted apps live at `<slug>.<appsDomain>`.
    public var appsDomain: String?
    public var allowlist: [String]
    public var proxy: ProxyConfiguration
    public var brand: BrandConfiguration
    public var directories: DirectoriesConfiguration
    public var logLevel: String
    public var logFormat: LogFormat
    public var registration: RegistrationConfiguration
    public var features: FeaturesConfiguration
    /// Members with this role (realm or client) may read the funnel report.
    public var operatorRole: String
    /// Where Prometheus reads the metrics; `nil` when `metrics.enabled` is false.
    public var metrics: MetricsConfiguration?
    public var rateLimits: RateLimitsConfiguration
    public var assertions: AssertionsConfiguration
    public var tracing: TracingConfiguration
    public var audit: AuditConfiguration

    public init(
        publicURL: URL,
        listen: ListenConfiguration = .init(),
        developmentMode: Bool = false,
        demoAppsPort: Int? = nil,
        oidc: OIDCConfiguration,
        cookie: CookieConfiguration = .init(),
        session: SessionConfiguration = .init(),
        storage: StorageConfiguration = .init(),
        apps: [AppConfiguration] = [],
        appsDomain: String? = nil,
        allowlist: [String] = [],
        proxy: ProxyConfiguration = .init(),
        brand: BrandConfiguration = .init(),
        directories: DirectoriesConfiguration = .init(),
        logLevel: String = defaultLogLevel,
        logFormat: LogFormat = .text,
        registration: RegistrationConfiguration = .init(),
        features: FeaturesConfiguration = .init(),
        operatorRole: String = defaultOperatorRole,
        metrics: MetricsConfiguration? = nil,
        rateLimits: RateLimitsConfiguration = .init(),
        assertions: AssertionsConfiguration = .init(),
        tracing: TracingConfiguration = .init(),
        audit: AuditConfiguration = .init()
    ) {
        self.publicURL = publicURL
        self.listen = listen
        self.developmentMode = developmentMode
        self.demoAppsPort = demoAppsPort
        self.oidc = oidc
        self.cookie = cookie
        self.session = session
        self.storage = storage
        self.apps = apps
        self.appsDomain = appsDomain
        self.allowlist = allowlist
        self.proxy = proxy
        self.brand = brand
        self.directories = directories
        self.logLevel = logLevel
        self.logFormat = logFormat
        self.registration = registration
        self.features = features
        self.operatorRole = operatorRole
        self.metrics = metrics
        self.rateLimits = rateLimits
        self.assertions = assertions
        self.tracing = tracing
        self.audit = audit
    }

    public static let defaultLogLevel = "info"
    public static let defaultOperatorRole = "gatehouse-operator"

    /// The origin members see, without a trailing slash (`https://gate.example.org`).
    public var publicOrigin: String {
        var origin = "\(publicURL.scheme ?? "http")://\(publicURL.host ?? "localhost")"
        if let port = publicURL.port { origin += ":\(port)" }
        return origin
    }

    public var isHTTPS: Bool { publicURL.scheme?.lowercased() == "https" }

    /// Whether the session cookie carries `Secure`: always behind https unless the operator says otherwise.
    public var cookieIsSecure: Bool { cookie.secure ?? isHTTPS }

    public var redirectURI: String { publicOrigin + oidc.redirectPath }

    /// Every identity provider, the first one first.
    public var providers: [OIDCConfiguration] { [oidc] + otherProviders }
    public var postLogoutRedirectURI: String { publicOrigin + Paths.signedOutPage }
}

public struct ListenConfiguration: Sendable {
    public var host: String
    public var port: Int
    /// A request's head must arrive within this many seconds of its first byte (else `408`).
    public var headerTimeoutSeconds: Int
    /// A connection without a request for this long is closed.
    public var idleTimeoutSeconds: Int
    /// While a request's body arrives, bytes must keep coming: this long without any, while the gateway is ready to
    /// read them, ends the request with `408` (or, once an answer has begun, closes the connection).
    public var bodyTimeoutSeconds: Int
    /// An answer the client takes nothing of for this long ends its connection (a reader that never reads).
    public var sendTimeoutSeconds: Int
    /// The request line and header fields together (else `431`).
    public var maximumHeaderBytes: Int
    /// The request target (path and query; else `414`).
    public var maximumRequestTargetBytes: Int
    /// After `SIGTERM`, the gateway first drains for this long: `/readyz` fails, so that a load balancer stops
    /// sending new members, while every request still gets its answer, with `Connection: close`.
    public var drainSeconds: Int
    /// After the drain, in-flight requests (downloads, WebSockets) get this long to finish before they are cut.
    public var shutdownGraceSeconds: Int
    /// Load balancers (addresses or CIDR blocks) whose `X-Forwarded-For` names the client; nobody else's is believed.
    public var trustedProxies: [String]
    /// HTTPS on the members' listener; plain HTTP without it.
    public var tls: ListenTLSConfiguration?
    /// With TLS: a plain-HTTP port that sends everything to https (and answers `/healthz`).
    public var redirectHTTPPort: Int?
    /// Connections the listener holds at once; nil: three quarters of the open-file limit (raised to its hard limit at
    /// start). One more is closed as soon as it is accepted.
    public var maximumConnections: Int?
    /// Connections one client address (an IPv6 /64) holds at once, so that one client cannot take them all; a trusted
    /// proxy's are not counted against it (it carries many members).
    public var maximumConnectionsPerAddress: Int

    public init(
        host: String = "127.0.0.1", port: Int = 8080, headerTimeoutSeconds: Int = 10, idleTimeoutSeconds: Int = 75,
        bodyTimeoutSeconds: Int = 30, maximumHeaderBytes: Int = 32 * 1024, maximumRequestTargetBytes: Int = 8 * 1024, drainSeconds: Int = 5,
        shutdownGraceSeconds: Int = 30,
        trustedProxies: [String] = [], tls: ListenTLSConfiguration? = nil, redirectHTTPPort: Int? = nil,
        maximumConnections: Int? = nil, maximumConnectionsPerAddress: Int = 256, sendTimeoutSeconds: Int = 60
    ) {
        self.host = host
        self.port = port
        self.headerTimeoutSeconds = headerTimeoutSeconds
        self.idleTimeoutSeconds = idleTimeoutSeconds
        self.bodyTimeoutSeconds = bodyTimeoutSeconds
        self.maximumHeaderBytes = maximumHeaderBytes
        self.maximumRequestTargetBytes = maximumRequestTargetBytes
        self.drainSeconds = drainSeconds
        self.shutdownGraceSeconds = shutdownGraceSeconds
        self.trustedProxies = trustedProxies
        self.tls = tls
        self.redirectHTTPPort = redirectHTTPPort
        self.maximumConnections = maximumConnections
        self.maximumConnectionsPerAddress = maximumConnectionsPerAddress
        self.sendTimeoutSeconds = sendTimeoutSeconds
    }
}

/// How log lines are written: one JSON object per line (for a log pipeline), or plain text (for a terminal).
public enum LogFormat: String, Sendable, CaseIterable {
    case json, text
}

/// The operators' metrics listener (`GET /metrics`), apart from the members' one unless the operator says so.
public struct MetricsConfiguration: Sendable, Equatable {
    public var host: String
    public var port: Int
    /// Also (not instead) answer `/metrics` on the members' listener.
    public var onMembersListener: Bool

    public init(host: String = "127.0.0.1", port: Int = 9464, onMembersListener: Bool = false) {
        self.host = host
        self.port = port
        self.onMembersListener = onMembersListener
    }
}

/// How fast one client address may start sign-ins and come back from the provider, and one member may check
/// usernames (verification codes have their own limits, under `registration`).
public struct RateLimitsConfiguration: Sendable, Equatable {
    public var signInStarts: RateLimitRule
    public var callbacks: RateLimitRule
    public var usernameChecks: RateLimitRule

    public init(
        signInStarts: RateLimitRule = .init(limit: 30, periodSeconds: 60), callbacks: RateLimitRule = .init(limit: 30, periodSeconds: 60),
        usernameChecks: RateLimitRule = .init(limit: 60, periodSeconds: 60)
    ) {
        self.signInStarts = signInStarts
        self.callbacks = callbacks
        self.usernameChecks = usernameChecks
    }
}

public struct OIDCConfiguration: Sendable {
    /// The provider's name in the gateway (`oidc[].id`): on its sign-in button's link, in the sessions it starts, in
    /// the accounts of all but the first (`<id>:<sub>`).
    public var id: String
    /// What its button says (`oidc[].name`), with several providers.
    public var name: String?
    public var issuer: String
    public var clientID: String
    /// Only from the environment or a `_FILE`; absent for a public client using PKCE alone.
    public var clientSecret: String?
    public var scopes: [String]
    public var redirectPath: String
    public var clockSkewSeconds: Int
    public var timeoutSeconds: Int
    /// After two timeouts in a row, how long every call to the provider fails at once (`ProviderBreaker`).
    public var pauseAfterTimeoutsSeconds: Int
    /// How old a session's tokens, and so the member's roles and groups, may grow before they are refreshed, however
    /// long the access token lives (`oidc.refresh_seconds`).
    public var refreshSeconds: Int
    /// The authorities the provider's certificate must chain to instead of the system's (`oidc.tls.ca_file`), and a
    /// client certificate for a provider that asks for one.
    public var tls: AppTLSConfiguration?

    public static let defaultScopes = ["openid", "profile", "email", "phone", "roles", "groups"]

    public init(
        id: String = "oidc",
        name: String? = nil,
        issuer: String,
        clientID: String,
        clientSecret: String? = nil,
        scopes: [String] = OIDCConfiguration.defaultScopes,
        redirectPath: String = Paths.callback,
        clockSkewSeconds: Int = 60,
        timeoutSeconds: Int = 10,
        pauseAfterTimeoutsSeconds: Int = 30,
        refreshSeconds: Int = 300,
        tls: AppTLSConfiguration? = nil
    ) {
        self.id = id
        self.name = name
        self.tls = tls
        self.refreshSeconds = refreshSeconds
        self.issuer = issuer
        self.clientID = clientID
        self.clientSecret = clientSecret
        self.scopes = scopes
        self.redirectPath = redirectPath
        self.clockSkewSeconds = clockSkewSeconds
        self.timeoutSeconds = timeoutSeconds
        self.pauseAfterTimeoutsSeconds = pauseAfterTimeoutsSeconds
    }
}

public struct CookieConfiguration: Sendable {
    public var name: String
    /// `nil` means: `Secure` exactly when the public URL is https.
    public var secure: Bool?
    /// A parent domain of the gateway's host (`example.org`): the session cookie then reaches the external apps'
    /// hosts too, whose ingress passes it to `/auth/verify`. `nil`: the gateway's host only.
    public var domain: String?
    public init(name: String = "gatehouse_session", secure: Bool? = nil, domain: String? = nil) {
        self.name = name
        self.secure = secure
        self.domain = domain
    }
}

public struct SessionConfiguration: Sendable {
    public var idleTimeoutSeconds: Int
    public var absoluteTimeoutSeconds: Int
    /// Tokens are refreshed when they expire within this many seconds.
    public var refreshWindowSeconds: Int
    /// How long before the idle or the absolute limit the member is warned, with a way to stay signed in (0: never).
    public var warningSeconds: Int
    /// A session used from a second network within minutes of the first ends (it is flagged either way).
    public var bindToNetwork: Bool
    public init(
        idleTimeoutSeconds: Int = 30 * 60, absoluteTimeoutSeconds: Int = 12 * 3600, refreshWindowSeconds: Int = 300, warningSeconds: Int = 120,
        bindToNetwork: Bool = false
    ) {
        self.warningSeconds = warningSeconds
        self.bindToNetwork = bindToNetwork
        self.idleTimeoutSeconds = idleTimeoutSeconds
        self.absoluteTimeoutSeconds = absoluteTimeoutSeconds
        self.refreshWindowSeconds = refreshWindowSeconds
    }
}

public struct ProxyConfiguration: Sendable {
    public var connectTimeoutSeconds: Int
    /// The longest wait for the next bytes from an upstream.
    public var readTimeoutSeconds: Int
    public var maximumRequestBodyBytes: Int
    public var maximumConnectionsPerHost: Int
    /// Plain http to loopback upstreams (development); otherwise upstreams are https only.
    public var allowHTTPLoopback: Bool
    /// Upstream names may resolve to private (RFC 1918, CGNAT, ULA) addresses; loopback needs `allowHTTPLoopback`;
    /// link-local and reserved addresses are never allowed.
    public var allowPrivateAddresses: Bool
    /// Replaces the gateway's default policy for proxied pages; upstream policies are enforced as well.
    public var contentSecurityPolicy: String?
    /// A compressed page the gateway inflates (to inject into it) may grow to at most this many bytes…
    public var maximumInflatedBytes: Int
    /// …and, past its first MiB, to at most this many times what arrived compressed.
    public var maximumInflationRatio: Int
    /// Domains no app may set a cookie on, beyond the parents of wildcard allowlist entries (which always are).
    public var cookieBoundaries: [String]
    /// Pages the gateway rewrites go gzipped to browsers that take it.
    public var compressPages: Bool
    /// What the leaving page lets a member do with a link to a host outside the allowlist.
    public var leaving: Leaving

    public enum Leaving: String, Sendable, CaseIterable {
        /// The page names the destination and offers to continue there.
        case interstitial
        /// The page names the destination and says leaving is not allowed.
        case block
    }

    public init(
        connectTimeoutSeconds: Int = 5, readTimeoutSeconds: Int = 30, maximumRequestBodyBytes: Int = 25 << 20,
        maximumConnectionsPerHost: Int = 64, allowHTTPLoopback: Bool = false, allowPrivateAddresses: Bool = false,
        contentSecurityPolicy: String? = nil, maximumInflatedBytes: Int = 64 << 20, maximumInflationRatio: Int = 100,
        cookieBoundaries: [String] = [], compressPages: Bool = true, leaving: Leaving = .interstitial
    ) {
        self.connectTimeoutSeconds = connectTimeoutSeconds
        self.readTimeoutSeconds = readTimeoutSeconds
        self.maximumRequestBodyBytes = maximumRequestBodyBytes
        self.maximumConnectionsPerHost = maximumConnectionsPerHost
        self.allowHTTPLoopback = allowHTTPLoopback
        self.allowPrivateAddresses = allowPrivateAddresses
        self.contentSecurityPolicy = contentSecurityPolicy
        self.maximumInflatedBytes = maximumInflatedBytes
        self.maximumInflationRatio = maximumInflationRatio
        self.cookieBoundaries = cookieBoundaries
        self.compressPages = compressPages
        self.leaving = leaving
    }
}

public struct DirectoriesConfiguration: Sendable {
    public var templates: String
    public var publicFiles: String
    public var strings: String
    public var data: String
    public init(
        templates: String = "Templates", publicFiles: String = "Public", strings: String = "Strings",
        data: String = StorageConfiguration.defaultDataFolder
    ) {
        self.templates = templates
        self.publicFiles = publicFiles
        self.strings = strings
        self.data = data
    }
}

extension GatehouseConfiguration {
    /// Whether `identity` may use the operator console and its reports (`operator.role`).
    public func isOperator(_ identity: MemberIdentity) -> Bool {
        identity.roles.contains(operatorRole)
    }
}
