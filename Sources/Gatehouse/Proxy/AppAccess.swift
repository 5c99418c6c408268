import Foundation
import GatehouseCore
import GatehouseStorage
import HTTPTypes
import Logging
import NIOConcurrencyHelpers

/// The one way into an app. Every entry point (`/apps/<slug>/…`, an app host, a WebSocket upgrade) asks it whether
/// a member may reach a path of an app, and gets back everything forwarding needs, or the reason for the refusal.
/// Level, roles and groups, the path's shape, the allowlist and the identity headers are decided here only.
struct AppAccess: Sendable {
    let catalog: AppCatalog
    let policy: UpstreamPolicy
    let configuration: GatehouseConfiguration
    let assertions: AssertionSigner
    /// Where a member's first request to an app in a session is recorded.
    let audit: AuditTrail?
    /// The policy's verdict on each app's host (`openWithoutWaiting`), with when it runs out.
    private let verdicts = NIOLockedValueBox<[String: Verdict]>([:])
    /// Each thread's own copies of the verdicts it used, read first (no lock shared by the event loops).
    private let verdictsSeen = ThreadMemo<String, Verdict>(limit: 256)
    private typealias Verdict = (host: String, address: String?, until: ContinuousClock.Instant)

    /// Each app's header rules, worked out once.
    private let headerRules: [String: HeaderHygiene.Rules]
    /// The apps with TLS settings of their own (`apps[].tls`), read once.
    private let upstreamTLS: [String: UpstreamTLS]

    init(
        catalog: AppCatalog, policy: UpstreamPolicy, configuration: GatehouseConfiguration, assertions: AssertionSigner, audit: AuditTrail? = nil
    ) throws {
        self.audit = audit
        self.catalog = catalog
        self.policy = policy
        self.configuration = configuration
        self.assertions = assertions
        upstreamTLS = try UpstreamTLS.make(for: catalog.apps)
        let origins = OriginMapping(catalog: catalog, publicOrigin: configuration.publicOrigin)
        self.origins = origins
        // An identity header of any app is the gateway's to set, towards every app.
        let identityNames = catalog.apps.reduce(into: Set<String>()) { names, app in names.formUnion(HeaderHygiene.identityNames(of: app.headers)) }
        headerRules = Dictionary(
            catalog.apps.map { app in
                let prefix = app.mount == .path && !app.isToldItsPrefix ? Paths.app(app.slug) : nil
                let rules = HeaderHygiene.Rules(
                    app.headers, publicURL: configuration.publicURL, pageHost: origins.bySlug[app.slug]?.pageAuthority, prefix: prefix,
                    everyAppsIdentityNames: identityNames)
                return (app.slug, rules)
            },
            uniquingKeysWith: { first, _ in first })
        clientCookies = Dictionary(
            catalog.apps.compactMap { app in
                ClientCookies(app: app, onAppHost: app.mount == .host && catalog.appsDomain != nil, isSecure: configuration.cookieIsSecure)
                    .map { (app.slug, $0) }
            },
            uniquingKeysWith: { first, _ in first })
    }

    /// The apps' client cookies (`apps[].client_cookies`), by slug, worked out once.
    private let clientCookies: [String: ClientCookies]

    /// How the browser's `Origin` and `Referer` reach apps, and the gateway's own check of where requests come from.
    let origins: OriginMapping

    private func rules(_ app: AppConfiguration) -> HeaderHygiene.Rules {
        headerRules[app.slug] ?? HeaderHygiene.Rules(app.headers, publicURL: configuration.publicURL)
    }

    /// What forwarding a request to an app needs, once access is granted.
    struct Forwarding: Sendable {
        let app: AppConfiguration
        let session: Session
        /// The upstream URL of the request, and the checked address to connect to.
        let url: URL
        let target: UpstreamTarget
        /// Whose cookies from the jar go with it.
        let origin: CookieOrigin
        let urls: URLRewriter
        let rules: HeaderHygiene.Rules
        /// The signed identity assertion, when the app takes one (held per session and app, not signed per request).
        let assertion: String?
        let origins: OriginMapping
        /// The app's cookies its scripts read, copied to the browser (`apps[].client_cookies`), if it has any.
        let clientCookies: ClientCookies?

        /// The headers the app gets: the browser's allowed ones, then the gateway's forwarding and identity headers,
        /// the assertion and the access token as the app's configuration says, the same on every entry point.
        /// `cookie` is the jar's `Cookie` value for the app: one field, as HTTP/1.1 wants it (RFC 6265 §5.4), not split
        /// into one per cookie as setting it through `HTTPFields`' subscript would.
        func requestHeaders(from browser: HTTPFields, clientAddress: String?, cookie: String?, trace: TraceContext?) -> HTTPFields {
            var headers = HeaderHygiene.requestHeaders(from: browser, for: rules)
            mapOrigins(&headers)
            // The app's request is a child of the gateway's span: the browser's own `traceparent` never passes.
            if let trace { headers.append(HTTPField(name: HeaderHygiene.traceparent, value: trace.traceparent)) }
            HeaderHygiene.addForwardingHeaders(&headers, clientAddress: clientAddress, rules: rules)
            HeaderHygiene.addIdentityHeaders(
                &headers, identity: session.identity, chatUserID: session.chatUserID, rules: rules, assertion: assertion,
                accessToken: session.tokens.accessToken)
            if let cookie { headers.append(HTTPField(name: .cookie, value: cookie)) }
            return headers
        }

        /// When the app refuses a request (4xx), the debug log names the browser's headers the gateway did not pass:
        /// the operator's lead when an app wants a header it trusts (`request_headers: "strict"`, `pass_headers`).
        func logRemovedHeaders(status: Int, browser: HTTPFields, logger: Logger) {
            guard (400...499).contains(status), logger.logLevel <= .debug else { return }
            let removed = HeaderHygiene.removedNames(from: browser, for: rules)
            guard !removed.isEmpty else { return }
            logger.debug(
                "app refused a request the gateway removed headers from",
                metadata: ["app": .string(app.slug), "status": .stringConvertible(status), "removed": .string(removed.joined(separator: ", "))])
        }

        static let fetchSite = HTTPField.Name("Sec-Fetch-Site")!

        /// `Origin` and `Referer` as the app expects them (`OriginMapping`); most requests carry neither or only a
        /// `Referer`, and are left alone at the cost of one look at each field.
        func mapOrigins(_ headers: inout HTTPFields) {
            let origin = headers[.origin]
            let referer = headers[.referer]
            guard origin != nil || referer != nil else { return }
            let mapped = origins.map(origin: origin, referer: referer, to: app.slug)
            if mapped.origin != origin { headers[.origin] = mapped.origin }
            if mapped.referer != referer { headers[.referer] = mapped.referer }
        }

        /// The gateway's own check of a request that changes something: it must come from one of the gateway's
        /// origins (the app, seeing its own origin, can no longer tell).
        func checkOrigin(method: HTTPRequest.Method, browser: HTTPFields) throws {
            guard !Forwarder.safe(method) else { return }
            if let refusal = origins.refusal(origin: browser[.origin], fetchSite: browser[Self.fetchSite]) {
                throw RequestError.forbidden(refusal)
            }
        }
    }

    /// Whether the member of `session` may open `app` at all (its level, roles and groups). `returnTo` is where the
    /// upgrade flow sends them back when the level is too low.
    func mayOpen(_ app: AppConfiguration, session: Session, returnTo: String) throws {
        guard session.level >= app.minimumLevel else { throw AccessError.registrationRequired(returnTo: returnTo) }
        guard AccessPolicy.mayOpen(app, level: session.level, roles: session.identity.roles, groups: session.identity.groups) else {
            throw AccessError.appNotAllowed(app.slug, missing: AccessPolicy.missing(app, roles: session.identity.roles, groups: session.identity.groups))
        }
    }

    /// Access to `rest` (a path with its query) of `app` for `session` at `moment`, or the error that refuses it.
    func open(
        _ app: AppConfiguration, rest: String, method: String, session: Session, moment: AccessMoment, returnTo: String
    ) async throws -> Forwarding {
        let (url, origin, urls) = try admit(app, rest: rest, method: method, session: session, moment: moment, returnTo: returnTo)
        var target = try await policy.check(url)
        target.tls = upstreamTLS[app.slug]
        audit?.opened(app.slug, path: rest, session: session)
        return forwarding(app, session: session, url: url, target: target, origin: origin, urls: urls)
    }

    /// The same, decided at once (for the data plane): `nil` when access is refused or needs a name resolved first;
    /// the application's path then decides, and answers a refusal with its page. Every path of an app is on the
    /// app's own host (`rest` starts with `/`), so the policy's verdict on that host is kept per app for as long as
    /// a resolution is trusted.
    func openWithoutWaiting(_ app: AppConfiguration, rest: String, method: String, session: Session, moment: AccessMoment) -> Forwarding? {
        guard let (url, origin, urls) = try? admit(app, rest: rest, method: method, session: session, moment: moment, returnTo: "") else {
            return nil
        }
        var target: UpstreamTarget
        let now = ContinuousClock.now
        if let kept = verdictsSeen.value(for: app.slug, isCurrent: { $0.until > now }, shared: { verdicts.withLockedValue { $0[app.slug] } }) {
            target = UpstreamTarget(url: url, host: kept.host, address: kept.address)
        } else {
            guard let checked = try? policy.checkWithoutWaiting(url) else { return nil }
            let verdict = (host: checked.host, address: checked.address, until: now + UpstreamPolicy.recentLifetime)
            verdicts.withLockedValue { $0[app.slug] = verdict }
            verdictsSeen.remember(verdict, for: app.slug)
            target = checked
        }
        target.tls = upstreamTLS[app.slug]
        audit?.opened(app.slug, path: rest, session: session)
        return forwarding(app, session: session, url: url, target: target, origin: origin, urls: urls)
    }

    private func forwarding(
        _ app: AppConfiguration, session: Session, url: URL, target: UpstreamTarget, origin: CookieOrigin, urls: URLRewriter
    ) -> Forwarding {
        Forwarding(
            app: app, session: session, url: url, target: target, origin: origin, urls: urls, rules: rules(app),
            assertion: assertion(app, session: session), origins: origins, clientCookies: clientCookies[app.slug])
    }

    /// The member's held assertion for `app`, unless the app takes none.
    private func assertion(_ app: AppConfiguration, session: Session) -> String? {
        app.headers.assertion == nil ? nil : assertions.assertion(for: session, app: app.slug, upstream: app.upstream)
    }

    /// Forward-auth for an external app (its ingress asks): the same rules and requirements as `open`, and the headers
    /// the ingress copies to the app: identity, the assertion (for the app's public origin), the access token.
    func verify(
        _ app: AppConfiguration, path: String, method: String, session: Session, moment: AccessMoment, returnTo: String
    ) throws -> HTTPFields {
        try decide(app, rest: path, method: method, session: session, moment: moment, returnTo: returnTo)
        audit?.opened(app.slug, path: path, session: session)
        // No forwarding headers: the ingress says where the request came from itself.
        var headers = HTTPFields()
        HeaderHygiene.addIdentityHeaders(
            &headers, identity: session.identity, chatUserID: session.chatUserID, rules: rules(app), assertion: assertion(app, session: session),
            accessToken: session.tokens.accessToken)
        return headers
    }

    /// Whether `session` may still have what it opened at `rest` of `app` from `client` (a WebSocket held open while
    /// the member's roles, groups or level change): the same decision as when it was opened, except for how recent
    /// the member's sign-in is (time passing never cuts what a recent sign-in opened).
    func stillAllows(_ app: AppConfiguration, rest: String, session: Session, client: IPAddress?) -> Bool {
        let moment = AccessMoment(client: client, checksFreshness: false)
        return (try? decide(app, rest: rest, method: "GET", session: session, moment: moment, returnTo: rest)) != nil
    }

    /// The app's rules for this path and method, then its own requirements, then what the member must prove again
    /// (the rule's recent sign-in or PIN, the app's session limits): never a step-up for what the member could not
    /// open anyway.
    private func decide(
        _ app: AppConfiguration, rest: String, method: String, session: Session, moment: AccessMoment, returnTo: String
    ) throws {
        var proof: PathRules.Lack?
        switch app.rules.decide(path: rest, method: method, session: session, at: moment) {
        case .noRule, .allowed: break
        case .denied: throw AccessError.pathNotAllowed(app.slug, nil)
        case .lacking(.level): throw AccessError.registrationRequired(returnTo: returnTo)
        case .lacking(let lack) where lack.isProof: proof = lack
        case .lacking(let lack): throw AccessError.pathNotAllowed(app.slug, lack)
        case .unreadable: throw RequestError.badRequest("a path the app's rules cannot read")
        }
        try mayOpen(app, session: session, returnTo: returnTo)
        switch proof ?? app.sessionLimits.lacking(session, at: moment) {
        case .recentSignIn(let stepUp)?:
            throw AccessError.signInAgain(stepUp, returnTo: returnTo, gateway: configuration.publicOrigin)
        case .pin?: throw AccessError.pinRequired(returnTo: returnTo, gateway: configuration.publicOrigin)
        default: break
        }
    }

    /// Everything but the upstream's address: the app's rewriter, its rules for this path and method, the member's
    /// grant, the path's shape.
    private func admit(
        _ app: AppConfiguration, rest: String, method: String, session: Session, moment: AccessMoment, returnTo: String
    ) throws -> (URL, CookieOrigin, URLRewriter) {
        guard let urls = catalog.urlRewriter(for: app.slug) else { throw ProxyError.unknownApp(app.slug) }
        try decide(app, rest: rest, method: method, session: session, moment: moment, returnTo: returnTo)
        guard !Self.hasDotSegment(rest) else { throw RequestError.badRequest("dot segment in app path") }
        guard let url = catalog.upstreamURL(for: app, rest: rest), let origin = CookieOrigin(url: url) else {
            throw RequestError.badRequest("unusable path")
        }
        return (url, origin, urls)
    }

    /// `..` or `.` segments, plain or percent-encoded, would leave the app's base path on the upstream.
    static func hasDotSegment(_ rest: String) -> Bool {
        // Read what could become a dot or a separator (`%2e`, `%2f`, `%5c`, `\`) as that, segment by segment, in one
        // pass over the path (every request asks this).
        var rest = rest
        return rest.withUTF8 { bytes in
            var dots = 0
            var other = false
            var index = 0
            while index < bytes.count, bytes[index] != UInt8(ascii: "?") {
                var byte = bytes[index]
                if byte == UInt8(ascii: "%"), index + 2 < bytes.count {
                    switch (bytes[index + 1].asciiLowercased, bytes[index + 2].asciiLowercased) {
                    case (UInt8(ascii: "2"), UInt8(ascii: "e")): byte = UInt8(ascii: "."); index += 2
                    case (UInt8(ascii: "2"), UInt8(ascii: "f")), (UInt8(ascii: "5"), UInt8(ascii: "c")): byte = UInt8(ascii: "/"); index += 2
                    default: break
                    }
                }
                switch byte {
                case UInt8(ascii: "/"), UInt8(ascii: "\\"):
                    if !other && (dots == 1 || dots == 2) { return true }
                    dots = 0
                    other = false
                case UInt8(ascii: "."): dots += 1
                default: other = true
                }
                index += 1
            }
            return !other && (dots == 1 || dots == 2)
        }
    }
}
