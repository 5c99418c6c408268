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
        logger: Logger, tracer: GatewayTracer? = nil
    ) {
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

    func route(_ head: HTTPRequestHead, peer: SocketAddress?) -> DataPlaneRoute {
        guard let method = Self.method(head.method), let bodyLength = Self.bodyLength(head, limit: maximumRequestBodyBytes),
            method != .get || bodyLength == 0, !head.headers.contains(name: "upgrade"), let mounted = mounted(head),
            let session = cache.session(mounted.sessionID), resolver.isSettled(session),
            case .some(let jar) = cache.jar(session.id), cache.pendingJarChanges < Self.pendingJarLimit,
            let forwarding = access.openWithoutWaiting(mounted.app, rest: mounted.rest, method: method.rawValue, session: session),
            let endpoint = Self.endpoint(forwarding.target)
        else { return .application }
        let app = mounted.app

        let browser = HTTPFields(head.headers)
        // A form or a fetch that changes something comes from the gateway's own pages or the app's, or it is the
        // application's to refuse (with its page).
        guard (try? forwarding.checkOrigin(method: method, browser: browser)) != nil else { return .application }
        let clientAddress =
            clientAddresses.trustsAnyProxy
            ? clientAddresses.resolve(peer: peer?.ipAddress, forwardedFor: head.headers["x-forwarded-for"]) : peer?.ipAddress
        var jarCopy = jar ?? CookieJar()
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
        var upstream = HTTPHeaders(headers)
        upstream.replaceOrAdd(name: "host", value: upstreamAuthorities[app.slug] ?? Self.authority(of: forwarding.url))
        if bodyLength > 0 { upstream.replaceOrAdd(name: "content-length", value: String(bodyLength)) }
        return .proxy(
            ProxiedRequest(
                plane: self, forwarding: forwarding, endpoint: endpoint,
                upstreamHead: HTTPRequestHead(version: .http1_1, method: head.method, uri: Self.requestTarget(of: forwarding.url), headers: upstream),
                memberURI: head.uri, gatewayBase: mounted.gatewayBase, requestBodyLength: bodyLength, isNavigation: GatewayBar.isDocumentNavigation(method: method, headers: browser),
                accept: browser[.accept], acceptLanguage: browser[.acceptLanguage], acceptsGzip: acceptEncoding.takesGzip, trace: trace,
                spans: spans, browserCookies: forwarding.clientCookies == nil ? [] : browser[values: .cookie]))
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
    static func bodyLength(_ head: HTTPRequestHead, limit: Int) -> Int? {
        guard !head.headers.contains(name: "transfer-encoding") else { return nil }
        let values = head.headers["content-length"]
        // Without a length, only a `GET` is known to have no body (an HTTP/2 stream's body may come without one).
        guard let first = values.first else { return head.method == .GET ? 0 : nil }
        guard values.allSatisfy({ $0 == first }), let length = Int(first), length >= 0, length <= limit else { return nil }
        return length
    }

    /// The app a request is for, the rest of its path, and the session it comes with, by the app's mount.
    struct Mounted {
        let app: AppConfiguration
        let rest: String
        let sessionID: String
        /// What the bar's files and links start with: the gateway's origin on an app host, nothing on its own host.
        let gatewayBase: String
    }

    /// On an app host (`slug.apps.example`), any path of the app with the host's grant, whose session this replica
    /// has looked up before (the handoff's and sign-out's own paths, and the bar's choices posted, are the
    /// application's); on the gateway's host,
    /// `/apps/<slug>/…` of a path-mounted app with the session cookie.
    func mounted(_ head: HTTPRequestHead) -> Mounted? {
        if let app = catalog.hostMountedApp(authority: head.headers.first(name: "host")) {
            let path = head.uri.prefix { $0 != "?" }
            guard path.hasPrefix("/"), path != HostMountPaths.handoff, path != HostMountPaths.signedOut,
                head.method != .POST || path != Paths.frame,
                let grant = Self.cookie(named: HostMountCookies.grant, in: head.headers), !grant.isEmpty, grant.utf8.count <= 128,
                let sessionID = cache.grantedSession(tokenHash: TokenHash.hex(grant), slug: app.slug)
            else { return nil }
            return Mounted(app: app, rest: head.uri, sessionID: sessionID, gatewayBase: publicOrigin)
        }
        guard let (app, rest) = appPath(head.uri), catalog.isProxiedOnPaths(app),
            let cookie = Self.cookie(named: cookieName, in: head.headers), !cookie.isEmpty, cookie.utf8.count <= 128
        else { return nil }
        return Mounted(app: app, rest: rest, sessionID: SessionResolver.sessionID(forCookie: cookie), gatewayBase: "")
    }

    /// `/apps/<slug>/rest`: the app and the rest (from its `/`, query included); `/apps/<slug>` alone is left to the
    /// application, which redirects it.
    func appPath(_ uri: String) -> (AppConfiguration, String)? {
        let prefix = Paths.appsPrefix + "/"
        guard uri.hasPrefix(prefix) else { return nil }
        let afterPrefix = uri.dropFirst(prefix.count)
        guard let slash = afterPrefix.firstIndex(of: "/") else { return nil }
        guard let app = catalog.app(String(afterPrefix[..<slash])) else { return nil }
        return (app, String(afterPrefix[slash...]))
    }

    /// The value of the first cookie called `name` in the request's `Cookie` fields.
    static func cookie(named name: String, in headers: HTTPHeaders) -> String? {
        // Read as bytes, pair by pair, without splitting the field: every request asks this.
        let name = name.utf8
        for (fieldName, field) in headers where fieldName.utf8.elementsEqual("cookie".utf8, by: { $0.asciiLowercased == $1 }) {
            let bytes = field.utf8
            var pairStart = bytes.startIndex
            while pairStart < bytes.endIndex {
                let pairEnd = bytes[pairStart...].firstIndex(of: UInt8(ascii: ";")) ?? bytes.endIndex
                let pair = bytes[pairStart..<pairEnd].drop { $0 == UInt8(ascii: " ") }
                if let equals = pair.firstIndex(of: UInt8(ascii: "=")), pair[..<equals].elementsEqual(name) {
                    return String(Substring(pair[pair.index(after: equals)...]))
                }
                pairStart = pairEnd < bytes.endIndex ? bytes.index(after: pairEnd) : pairEnd
            }
        }
        return nil
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

/// One request the data plane answers: the mapping of the app's answer, and what the exchange leaves behind (the
/// same request counters and log line as the application's path, and `gatehouse_data_plane_requests_total`).
final class ProxiedRequest: DataPlaneExchange {
    let plane: ProxyDataPlane
    let forwarding: AppAccess.Forwarding
    let endpoint: UpstreamEndpoint
    let upstreamHead: HTTPRequestHead
    let memberURI: String
    /// The gateway's origin on an app host, else empty (`ProxyDataPlane.Mounted`).
    let gatewayBase: String
    let isNavigation: Bool
    /// The browser's `Accept`: an error is answered as JSON to a caller that wants it.
    let accept: String?
    /// The browser's `Accept-Language`, read only for what the data plane renders (the bar, a failure page).
    let acceptLanguage: String?
    /// Whether the browser takes a gzipped page.
    let acceptsGzip: Bool
    let trace: TraceContext
    /// The exported spans of this request, when the gateway exports any.
    struct Spans {
        let request: any Span
        let exchange: any Span
    }

    let spans: Spans?
    /// The browser's `Cookie` fields, kept for an app whose client cookies are compared with them.
    let browserCookies: [String]
    /// The request's id (Hummingbird's kind, so that both paths' log lines look alike), made with the logger that
    /// carries it only when something is logged: most requests log nothing below `info`.
    private(set) lazy var requestID = RequestID().description
    private(set) lazy var logger: Logger = {
        var logger = plane.logger
        logger[metadataKey: "hb.request.id"] = .string(requestID)
        logger[metadataKey: "trace_id"] = .string(trace.traceID)
        return logger
    }()
    let started = ContinuousClock.now
    /// Only a `GET` is sent again on another connection: a body has gone out already.
    var isIdempotent: Bool { upstreamHead.method == .GET }
    let requestBodyLength: Int

    private var mapped: AnswerMapping.Head?
    private var status = HTTPResponse.Status.ok
    private var transform: HTMLResponseTransform?

    init(
        plane: ProxyDataPlane, forwarding: AppAccess.Forwarding, endpoint: UpstreamEndpoint, upstreamHead: HTTPRequestHead, memberURI: String,
        gatewayBase: String = "", requestBodyLength: Int = 0, isNavigation: Bool, accept: String?, acceptLanguage: String?, acceptsGzip: Bool, trace: TraceContext, spans: Spans? = nil,
        browserCookies: [String] = []
    ) {
        self.browserCookies = browserCookies
        self.acceptLanguage = acceptLanguage
        self.spans = spans
        self.plane = plane
        self.forwarding = forwarding
        self.endpoint = endpoint
        self.upstreamHead = upstreamHead
        self.memberURI = memberURI
        self.gatewayBase = gatewayBase
        self.requestBodyLength = requestBodyLength
        self.isNavigation = isNavigation
        self.accept = accept
        self.acceptsGzip = acceptsGzip
        self.trace = trace
    }

    func start(_ upstream: HTTPResponseHead) throws -> ResponseStart {
        let fields = HTTPFields(upstream.headers)
        let session = forwarding.session
        let setCookies = fields[values: .setCookie]
        if !setCookies.isEmpty { plane.cache.changeJar(session.id, plane.jars.absorbing(setCookies: setCookies, from: forwarding.origin)) }
        status = HTTPResponse.Status(code: Int(upstream.status.code))
        var mapped = try plane.mapping.map(
            app: forwarding.app, status: status, upstream: fields, isHEAD: false, isNavigation: isNavigation, acceptsGzip: acceptsGzip,
            url: forwarding.url,
            urls: forwarding.urls, logger: logger)
        if let client = forwarding.clientCookies, case .some(let jar) = plane.cache.jar(session.id) {
            for copy in client.settings(jar: jar ?? CookieJar(), origin: forwarding.origin, browserCookies: browserCookies) {
                mapped.headers.append(HTTPField(name: .setCookie, value: copy))
            }
        }
        self.mapped = mapped
        guard let encoding = mapped.encoding else {
            var headers = mapped.headers
            if let length = mapped.contentLength { headers[.contentLength] = length }
            return .now(memberHead(headers))
        }
        transform = try inLanguage {
            try plane.mapping.transform(
                mapped, encoding: encoding, bar: plane.bar, session: session, app: forwarding.app,
                // On an app host the way back after the upgrade is the app's loading page, as on the application's path.
                returnTo: gatewayBase.isEmpty ? memberURI : Paths.open(forwarding.app.slug), gatewayBase: gatewayBase, urls: forwarding.urls)
        }
        return .afterFirstChunk
    }

    /// Binds the request's language (the member's choice, else the browser's) around what renders: the data plane has
    /// no task for `LanguageMiddleware` to bind it in.
    private func inLanguage<Result>(_ render: () throws -> Result) rethrows -> Result {
        let language = plane.renderer.languages.language(session: forwarding.session, acceptLanguage: acceptLanguage)
        return try RequestLanguage.$current.withValue(RequestLanguage(language), operation: render)
    }

    /// The body's first bytes decide, as on the application's path: a UTF-16 document (by its byte-order mark)
    /// passes through untouched; anything else is transformed, and a body that fails at once still gets a page.
    func startAfterFirstChunk(_ chunk: ByteBuffer?) throws -> (HTTPResponseHead, ByteBuffer?) {
        guard let mapped else { throw ProxyError.upstreamReset("no head") }
        var headers = mapped.headers
        if let chunk, mapped.encoding == .identity, AnswerMapping.startsWithUTF16ByteOrderMark(chunk.readableBytesView) {
            transform = nil
            if let length = mapped.contentLength { headers[.contentLength] = length }
            return (memberHead(headers), chunk)
        }
        let first = try chunk.map { try transform?.process($0) ?? $0 }
        headers = mapped.transformedHeaders
        if mapped.nonce != nil { plane.bar.recordShown(session: forwarding.session) }
        return (memberHead(headers), first)
    }

    func body(_ chunk: ByteBuffer) throws -> ByteBuffer {
        guard transform != nil else { return chunk }
        return try transform!.process(chunk)
    }

    func end() -> ByteBuffer? {
        transform?.finish()
    }

    func answer(_ failure: DataPlaneFailure) -> (HTTPResponseHead, ByteBuffer) {
        let error = Self.proxyError(failure)
        let level: Logger.Level = error.status.code >= 500 ? .error : .info
        logger.log(level: level, "request failed", metadata: ["reason": .string(error.reason), "error": .string("\(failure)")])
        let answer = inLanguage {
            ErrorAnswer.make(
                renderer: plane.renderer, status: error.status, reason: error.reason, key: error.messageKey, arguments: error.messageArguments,
                toast: error.toastKey, wantsJSON: ErrorAnswer.wantsJSON(accept: accept), requestID: requestID, retryURL: memberURI,
                logger: logger)
        }
        status = answer.status
        var headers = answer.headers
        headers[.contentLength] = "\(answer.body.utf8.count)"
        return (memberHead(headers), ByteBuffer(string: answer.body))
    }

    func finished(status sent: HTTPResponseStatus?, failure: DataPlaneFailure?) {
        let app = forwarding.app.slug
        if let spans {
            if let sent { spans.request.attributes["http.response.status_code"] = Int(sent.code) }
            if let failure { spans.exchange.recordError(Self.proxyError(failure)) }
            spans.exchange.end()
            spans.request.end()
        }
        if let failure {
            if let kind = Self.proxyError(failure).upstreamFailureKind, !Self.isMemberGone(failure) {
                plane.metrics.upstreamFailure(app: app, kind: kind)
            }
            if sent != nil, mapped != nil, !Self.isMemberGone(failure) {
                logger.warning("upstream body failed", metadata: ["app": .string(app), "error": .string("\(failure)")])
            }
        }
        guard let sent else { return }
        plane.metrics.dataPlaneRequest(app: app)
        RequestLog.record(
            metrics: plane.metrics, logger: plane.logger.logLevel <= .info ? logger : plane.logger, method: upstreamHead.method.rawValue,
            path: String(memberURI.prefix { $0 != "?" }), route: .proxy, app: app,
            status: Int(sent.code), duration: .now - started)
    }

    private func memberHead(_ fields: HTTPFields) -> HTTPResponseHead {
        var fields = fields
        plane.securityHeaders.apply(to: &fields)
        fields[.date] = plane.date.now
        fields[.server] = plane.serverName
        return HTTPResponseHead(version: .http1_1, status: HTTPResponseStatus(statusCode: status.code), headers: HTTPHeaders(fields))
    }

    static func isMemberGone(_ failure: DataPlaneFailure) -> Bool {
        if case .memberLeft = failure { return true }
        return false
    }

    /// A failure as the error the application's path would have thrown for it.
    static func proxyError(_ failure: DataPlaneFailure) -> ProxyError {
        switch failure {
        case .connect(let error): .upstreamUnreachable("\(error)")
        case .timeout: .upstreamTimeout("no answer in time")
        case .reset, .memberLeft: .upstreamReset("the connection closed")
        case .refused(let error as ProxyError): error
        case .refused(let error as RequestBodyMismatch): .requestBodyInvalid(error.description)
        case .refused(let error): .upstreamUnreachable("\(error)")
        }
    }
}

extension HTTPFields {
    /// NIO's fields as HTTP types' (names that are not tokens are left out: the parser would not have let them in).
    init(_ headers: HTTPHeaders) {
        self.init()
        reserveCapacity(headers.count)
        for (name, value) in headers {
            if let name = HTTPField.Name(name) { append(HTTPField(name: name, value: value)) }
        }
    }
}

extension HTTPHeaders {
    init(_ fields: HTTPFields) {
        self.init(fields.map { ($0.name.rawName, $0.value) })
    }
}
