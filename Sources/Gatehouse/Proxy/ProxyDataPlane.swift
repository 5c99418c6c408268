import Foundation
import GatehouseCore
import GatehouseDataPlane
import GatehouseStorage
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOHTTP1
import Tracing

/// The gateway's side of the data plane (`GatehouseDataPlane`): which requests it answers on the event loop, and
/// how. It takes a `GET` without a body for a path-mounted app, or on a host-mounted app's host with its grant
/// (`Mounted`), whose member's session and jar are in the state cache with nothing due (no refresh, no last-seen to write), to a host whose address is known, when the member
/// may open the app. Every decision is the one the application's path makes (`AppAccess`, `AnswerMapping`,
/// `HeaderHygiene`, `GatewayBar`); anything else, refusals included, goes on to the application, which decides
/// again and answers with its page. Jar changes go into the cache at once and to the store behind
/// (`JarWriteBehind`); a sign-out empties the cache, so the old cookie is refused here as there.
final class ProxyDataPlane: DataPlaneRoutes {
    let catalog: AppCatalog
    let access: AppAccess
    let cache: StateCache
    let resolver: SessionResolver
    let jars: SharedCookieJars
    let bar: GatewayBar
    let mapping: AnswerMapping
    let renderer: PageRenderer
    let securityHeaders: SecurityHeaders
    let metrics: GatewayMetrics
    let clientAddresses: ClientAddressResolver
    let cookieName: String
    let serverName: String
    /// The gateway's own origin, which the bar's links name on an app host.
    let publicOrigin: String
    /// `proxy.maximum_request_body_bytes`: a longer body is the application's to refuse.
    let maximumRequestBodyBytes: Int
    /// Replicas share the store: an answer that changed the jar waits for the write-behind to store the change
    /// (`ProxiedRequest.answerMayStart`), as the application's path writes it through before answering.
    let replicasShareJars: Bool
    let date = HTTPDate()
    let logger: Logger
    /// With a collector: each request's span and its upstream exchange's, made and ended on the event loop.
    let tracer: GatewayTracer?
    /// Each app's `Host` upstream, by slug: every path of an app is on its upstream's host.
    let upstreamAuthorities: [String: String]
    /// Past this many jar changes waiting for the store, requests go the application's way (which writes through).
    static let pendingJarLimit = 10_000

    init(
        catalog: AppCatalog, access: AppAccess, cache: StateCache, resolver: SessionResolver, jars: SharedCookieJars, bar: GatewayBar,
        mapping: AnswerMapping, renderer: PageRenderer, securityHeaders: SecurityHeaders, metrics: GatewayMetrics,
        clientAddresses: ClientAddressResolver, cookieName: String, serverName: String, publicOrigin: String, maximumRequestBodyBytes: Int,
        replicasShareJars: Bool = false, logger: Logger, tracer: GatewayTracer? = nil
    ) {
        self.replicasShareJars = replicasShareJars
        self.publicOrigin = publicOrigin
        self.maximumRequestBodyBytes = maximumRequestBodyBytes
        self.catalog = catalog
        self.access = access
        self.cache = cache
        self.resolver = resolver
        self.jars = jars
        self.bar = bar
        self.mapping = mapping
        self.renderer = renderer
        self.securityHeaders = securityHeaders
        self.metrics = metrics
        self.clientAddresses = clientAddresses
        self.cookieName = cookieName
        self.serverName = serverName
        self.logger = logger
        self.tracer = tracer
        upstreamAuthorities = Dictionary(uniqueKeysWithValues: catalog.apps.map { ($0.slug, Self.authority(of: $0.upstream)) })
    }

    func route(_ head: RequestHead, peer: SocketAddress?) -> DataPlaneRoute {
        let uri = head.uri
        guard let method = Self.method(head.method), let bodyLength = Self.bodyLength(head, limit: maximumRequestBodyBytes),
            method != .get || bodyLength == 0, !head.contains("upgrade"), let mounted = mounted(head, uri: uri),
            !KeptForms.isMarked(mounted.rest)
        else { return .application }
        let clientAddress =
            clientAddresses.trustsAnyProxy
            ? clientAddresses.resolve(peer: peer?.ipAddress, forwardedFor: head.values("x-forwarded-for")) : peer?.ipAddress
        let client = clientAddress.flatMap(IPAddress.init)
        // A rule's freshness is a comparison of times on the cached session, its network one of addresses.
        let now = Date()
        guard resolver.isSettled(mounted.session, client: client, now: now) else { return .application }
        let moment = AccessMoment(now: now, client: client, idle: max(0, now.timeIntervalSince(mounted.session.lastSeenAt)))
        guard let forwarding = access.openWithoutWaiting(mounted.app, rest: mounted.rest, method: method.rawValue, session: mounted.session, moment: moment),
            let endpoint = Self.endpoint(forwarding.target)
        else { return .application }
        let app = mounted.app

        let browser = HTTPFields(head)
        // A form or a fetch that changes something comes from the gateway's own pages or the app's, or it is the
        // application's to refuse (with its page).
        guard (try? forwarding.checkOrigin(method: method, browser: browser)) != nil else { return .application }
        var jarCopy = mounted.jar ?? CookieJar()
        let incoming = clientAddresses.incomingTrace(peer: peer?.ipAddress, traceparent: browser[HeaderHygiene.traceparent])
        let trace: TraceContext
        var spans: ProxiedRequest.Spans?
        if let tracer {
            let (request, requestTrace) = tracer.startRequest("\(method.rawValue) proxy", incoming: incoming)
            let exchange = tracer.startChild("upstream exchange", of: request, ofKind: .client)
            // The app's parent is the exchange's span, in the request's trace.
            trace = tracer.traceContext(of: exchange) ?? requestTrace
            spans = ProxiedRequest.Spans(request: request, exchange: exchange)
        } else {
            trace = incoming ?? .start()
        }
        var headers = forwarding.requestHeaders(
            from: browser, clientAddress: clientAddress, cookie: jarCopy.cookieHeader(for: forwarding.origin), trace: trace)
        // Read once: what the app may send (never more than the gateway can inflate) and whether the page goes gzipped.
        let acceptEncoding = AcceptEncoding(browser[.acceptEncoding])
        if let encodings = HeaderHygiene.acceptEncoding(browser: acceptEncoding) { headers[.acceptEncoding] = encodings }
        // Straight into the bytes the app gets: the hygienic fields never name `Host` or the body's framing.
        guard
            let upstreamHead = UpstreamRequestHead(
                method: head.method, target: Self.requestTarget(of: forwarding.url),
                host: upstreamAuthorities[app.slug] ?? Self.authority(of: forwarding.url), bodyLength: bodyLength,
                fields: headers.lazy.map { (name: $0.name.rawName, value: $0.value) })
        else { return .application }
        return .proxy(
            ProxiedRequest(
                plane: self, forwarding: forwarding, endpoint: endpoint, upstreamHead: upstreamHead,
                memberURI: uri, gatewayBase: mounted.gatewayBase, requestBodyLength: bodyLength, isNavigation: GatewayBar.isDocumentNavigation(method: method, headers: browser),
                accept: browser[.accept], acceptLanguage: browser[.acceptLanguage], acceptsGzip: acceptEncoding.takesGzip, trace: trace,
                spans: spans, jar: jarCopy, browserCookies: forwarding.clientCookies == nil ? [] : browser[values: .cookie],
                browserForDebugLog: logger.logLevel <= .debug ? browser : nil))
    }

    /// The methods the data plane proxies: `GET`, and those that send a form or a document (`HEAD`, `OPTIONS` and the
    /// rest are the application's).
    static func method(_ method: HTTPMethod) -> HTTPRequest.Method? {
        switch method {
        case .GET: .get
        case .POST: .post
        case .PUT: .put
        case .PATCH: .patch
        case .DELETE: .delete
        default: nil
        }
    }

    /// The length of the request's body when the data plane can take it: none, or a `Content-Length` within the
    /// gateway's limit. A chunked body, one over the limit or one of no stated length is the application's (which
    /// streams or refuses it).
    static func bodyLength(_ head: RequestHead, limit: Int) -> Int? {
        guard !head.contains("transfer-encoding") else { return nil }
        let values = head.values("content-length")
        // Without a length, only a `GET` is known to have no body (an HTTP/2 stream's body may come without one).
        guard let first = values.first else { return head.method == .GET ? 0 : nil }
        guard values.allSatisfy({ $0 == first }), let length = Int(first), length >= 0, length <= limit else { return nil }
        return length
    }

    /// The app a request is for, the rest of its path, and the session it comes with (and its jar), by the app's
    /// mount.
    struct Mounted {
        let app: AppConfiguration
        let rest: String
        let session: Session
        let jar: CookieJar?
        /// What the bar's files and links start with: the gateway's origin on an app host, nothing on its own host.
        let gatewayBase: String
    }

    /// On an app host (`slug.apps.example`), any path of the app with the host's grant, whose session this replica
    /// has looked up before (the handoff's and sign-out's own paths, the bar's choices, unread count and ring are the
    /// application's); on the gateway's host,
    /// `/apps/<slug>/…` of a path-mounted app with the session cookie. Either way only with a session the state cache
    /// holds with its jar, and fewer than `pendingJarLimit` jar changes waiting: any other request is the
    /// application's.
    func mounted(_ head: RequestHead, uri: String) -> Mounted? {
        if let app = catalog.hostMountedApp(authority: head.first("host")) {
            let path = uri.prefix { $0 != "?" }
            guard path.hasPrefix("/"), path != HostMountPaths.handoff, path != HostMountPaths.signedOut,
                path != Paths.frame, path != Paths.chatUnread, path != Paths.live,
                let grant = head.cookie(named: HostMountCookies.grant), !grant.isEmpty, grant.utf8.count <= 128,
                let member = cache.member(grant: grant, slug: app.slug, hash: TokenHash.hex, pendingJarLimit: Self.pendingJarLimit)
            else { return nil }
            return Mounted(app: app, rest: uri, session: member.session, jar: member.jar, gatewayBase: publicOrigin)
        }
        guard let (app, rest) = catalog.appPath(uri), catalog.isProxiedOnPaths(app),
            let cookie = head.cookie(named: cookieName), !cookie.isEmpty, cookie.utf8.count <= 128,
            let member = cache.member(token: cookie, hash: SessionResolver.sessionID, pendingJarLimit: Self.pendingJarLimit)
        else { return nil }
        return Mounted(app: app, rest: rest, session: member.session, jar: member.jar, gatewayBase: "")
    }

    /// Where to connect: the checked address (or the literal one), on the URL's port.
    static func endpoint(_ target: UpstreamTarget) -> UpstreamEndpoint? {
        let scheme = target.url.scheme?.lowercased()
        // TLS to apps is a later step of the data plane: https apps go the application's way.
        guard scheme == "http" else { return nil }
        let port = target.url.port ?? 80
        var literal = target.address ?? target.host
        if literal.hasPrefix("["), literal.hasSuffix("]") { literal = String(literal.dropFirst().dropLast()) }
        guard let address = try? SocketAddress(ipAddress: literal, port: port) else { return nil }
        return UpstreamEndpoint(address: address, host: target.host)
    }

    /// `Host` as the app knows itself: its name, and the port when it is not the scheme's.
    static func authority(of url: URL) -> String {
        let host = url.host ?? ""
        let isDefault = url.port == nil || (url.scheme == "http" && url.port == 80) || (url.scheme == "https" && url.port == 443)
        let name = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        return isDefault ? name : "\(name):\(url.port!)"
    }

    /// The path and query of `url` as written (percent-encoding untouched).
    static func requestTarget(of url: URL) -> String {
        let text = url.absoluteString.utf8
        guard let colon = text.firstIndex(of: UInt8(ascii: ":")), text[colon...].starts(with: "://".utf8) else { return "/" }
        let afterAuthority = text[text.index(colon, offsetBy: 3)...].drop { $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: "?") }
        let target = Substring(afterAuthority.prefix { $0 != UInt8(ascii: "#") })
        return target.first == "/" ? String(target) : "/" + target
    }
}
