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

/// One request the data plane answers: the mapping of the app's answer, and what the exchange leaves behind (the
/// same request counters and log line as the application's path, and `gatehouse_data_plane_requests_total`).
final class ProxiedRequest: DataPlaneExchange {
    let plane: ProxyDataPlane
    let forwarding: AppAccess.Forwarding
    let endpoint: UpstreamEndpoint
    let upstreamHead: UpstreamRequestHead
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
    /// The member's jar as the request was decided on (with the app's answer's cookies, once `start` took them in):
    /// what an app's client cookies are copied from.
    private var jar: CookieJar
    /// The browser's fields, kept only when the log takes debug lines (`AppAccess.Forwarding.logRemovedHeaders`).
    let browserForDebugLog: HTTPFields?
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

    /// The app's answer changed the member's jar (`start`).
    private var changedJar = false
    /// The member's answer, once the app's head came (`start`).
    private var plan: AnswerPlan?
    private var status = HTTPResponse.Status.ok

    init(
        plane: ProxyDataPlane, forwarding: AppAccess.Forwarding, endpoint: UpstreamEndpoint, upstreamHead: UpstreamRequestHead, memberURI: String,
        gatewayBase: String = "", requestBodyLength: Int = 0, isNavigation: Bool, accept: String?, acceptLanguage: String?, acceptsGzip: Bool, trace: TraceContext, spans: Spans? = nil,
        jar: CookieJar = CookieJar(), browserCookies: [String] = [], browserForDebugLog: HTTPFields? = nil
    ) {
        self.jar = jar
        self.browserCookies = browserCookies
        self.browserForDebugLog = browserForDebugLog
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
        if !setCookies.isEmpty {
            let change = plane.jars.absorbing(setCookies: setCookies, from: forwarding.origin)
            plane.cache.changeJar(session.id, change)
            if forwarding.clientCookies != nil { change(&jar) }
            changedJar = true
        }
        status = HTTPResponse.Status(code: Int(upstream.status.code))
        if let browserForDebugLog { forwarding.logRemovedHeaders(status: status.code, browser: browserForDebugLog, logger: logger) }
        let copies = forwarding.clientCookies?.settings(jar: jar, origin: forwarding.origin, browserCookies: browserCookies) ?? []
        let plan = try inLanguage {
            try plane.mapping.plan(
                app: forwarding.app, status: status, upstream: fields, isHEAD: false, isNavigation: isNavigation, acceptsGzip: acceptsGzip,
                url: forwarding.url, urls: forwarding.urls, clientCookies: copies, session: session, memberURI: memberURI,
                gatewayBase: gatewayBase, bar: plane.bar, logger: logger)
        }
        self.plan = plan
        if let headers = plan.headersNow { return .now(memberHead(headers)) }
        return .afterFirstChunk
    }

    /// Where replicas share the store, an answer that changed the jar waits until the write-behind has stored the
    /// change: the member's next request (the answer's redirect, most often) may reach another replica, which reads
    /// the store. The application's path writes through before answering; this is the same order, a few
    /// milliseconds later.
    /// A store that has not taken the change within `storeWaitLimit` is "temporarily unavailable" to the member, as
    /// a write through would be on the application's path.
    func answerMayStart(on eventLoop: any EventLoop) -> EventLoopFuture<Void>? {
        guard changedJar, plane.replicasShareJars else { return nil }
        let stored = eventLoop.makePromise(of: Void.self)
        let limit = eventLoop.scheduleTask(in: Self.storeWaitLimit) {
            stored.fail(StorageError.unavailable("the app's cookies were not stored within \(Self.storeWaitLimit)"))
        }
        plane.cache.whenJarStored(forwarding.session.id) {
            limit.cancel()
            stored.succeed()
        }
        return stored.futureResult
    }

    static let storeWaitLimit = TimeAmount.seconds(5)

    /// Binds the request's language (the member's choice, else the browser's) around what renders: the data plane has
    /// no task for `LanguageMiddleware` to bind it in.
    private func inLanguage<Result>(_ render: () throws -> Result) rethrows -> Result {
        let language = plane.renderer.languages.language(session: forwarding.session, acceptLanguage: acceptLanguage)
        return try RequestLanguage.$current.withValue(RequestLanguage(language), operation: render)
    }

    /// The body's first bytes decide (`AnswerPlan.start`, as on the application's path).
    func startAfterFirstChunk(_ chunk: ByteBuffer?) throws -> (HTTPResponseHead, ByteBuffer?) {
        guard plan != nil else { throw ProxyError.upstreamReset("no head") }
        let (headers, first) = try plan!.start(chunk)
        return (memberHead(headers), first)
    }

    func body(_ chunk: ByteBuffer) throws -> ByteBuffer {
        try plan?.body(chunk) ?? chunk
    }

    func end() -> ByteBuffer? {
        plan?.end()
    }

    func answer(_ failure: DataPlaneFailure) -> (HTTPResponseHead, ByteBuffer) {
        let error = Self.presented(failure)
        let level: Logger.Level = error.status.code >= 500 ? .error : .info
        logger.log(level: level, "request failed", metadata: ["reason": .string(error.reason), "error": .string("\(failure)")])
        let answer = inLanguage {
            ErrorAnswer.make(
                renderer: plane.renderer, status: error.status, reason: error.reason, key: error.messageKey, arguments: error.messageArguments,
                toast: (error as? ProxyError)?.toastKey, wantsJSON: ErrorAnswer.wantsJSON(accept: accept), requestID: requestID, retryURL: memberURI,
                logger: logger)
        }
        status = answer.status
        var headers = answer.headers
        headers[.contentLength] = "\(answer.body.utf8.count)"
        return (memberHead(headers), ByteBuffer(string: answer.body))
    }

    func finished(status sent: HTTPResponseStatus?, failure: DataPlaneFailure?) {
        let app = forwarding.app.slug
        let error = failure.map(Self.presented)
        if let spans {
            if let sent { spans.request.attributes["http.response.status_code"] = Int(sent.code) }
            if let error { spans.exchange.recordError(error) }
            spans.exchange.end()
            spans.request.end()
        }
        if let failure {
            if let kind = (error as? ProxyError)?.upstreamFailureKind, !Self.isMemberGone(failure) {
                plane.metrics.upstreamFailure(app: app, kind: kind)
                // A redirect out of the allowlist is a refusal, as on the application's path.
                if kind == .blocked, let error { plane.access.audit?.refusal(error, member: forwarding.session.identity.sub, app: app, path: memberURI) }
            }
            if sent != nil, plan != nil, !Self.isMemberGone(failure) {
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

    /// A failure as the member is told of it: the store's (the answer's jar change not stored in time) as the
    /// application's path presents it, anything else as the proxy's error.
    static func presented(_ failure: DataPlaneFailure) -> any PresentableError {
        if case .refused(let error as StorageError) = failure { return error }
        return proxyError(failure)
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
