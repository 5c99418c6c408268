import AsyncHTTPClient
import Foundation
import GatehouseCore
import HTTPTypes
import Hummingbird
import Logging

/// `/apps/<slug>/…`: the member's request to an app, through the allowlist, with the shared cookie jar; on the
/// way back Set-Cookie into the jar, redirects checked and rewritten, CSP merged, URLs rewritten, the gateway bar injected.
public struct ProxyController: Sendable {
    let catalog: AppCatalog
    let forwarder: Forwarder
    let access: AppAccess
    let jars: SharedCookieJars
    let bar: GatewayBar
    let mapping: AnswerMapping
    let configuration: GatehouseConfiguration
    let metrics: GatewayMetrics
    /// Where a form posted when the member must prove themselves again waits for them.
    let keptForms: KeptForms?
    let tracer: GatewayTracer?

    init(
        catalog: AppCatalog, forwarder: Forwarder, access: AppAccess, jars: SharedCookieJars, bar: GatewayBar,
        configuration: GatehouseConfiguration, metrics: GatewayMetrics, renderer: PageRenderer, keptForms: KeptForms? = nil,
        tracer: GatewayTracer? = nil
    ) {
        self.keptForms = keptForms
        self.tracer = tracer
        self.catalog = catalog
        self.forwarder = forwarder
        self.access = access
        self.jars = jars
        self.bar = bar
        self.configuration = configuration
        self.metrics = metrics
        mapping = AnswerMapping(configuration: configuration, renderer: renderer)
    }

    static let methods: [HTTPRequest.Method] = [.get, .head, .post, .put, .patch, .delete, .options]

    public func addRoutes(to group: RouterGroup<SignedInRequestContext>) {
        for method in Self.methods {
            group.on(RouterPath(stringLiteral: Paths.appsPrefix + "/:slug"), method: method) { request, context in
                try await self.handle(request, context: context)
            }
            group.on(RouterPath(stringLiteral: Paths.appsPrefix + "/:slug/**"), method: method) { request, context in
                try await self.handle(request, context: context)
            }
        }
    }

    func handle(_ request: Request, context: SignedInRequestContext) async throws -> Response {
        let slug = context.parameters.get("slug") ?? ""
        guard let app = catalog.app(slug), catalog.isProxiedOnPaths(app) else { throw ProxyError.missing(slug, in: catalog) }
        let prefix = Paths.app(slug)
        let rest = String(request.uri.description.dropFirst(prefix.count))
        guard rest.hasPrefix("/") else {
            // `/apps/wiki` → `/apps/wiki/`, so that the app's relative URLs resolve below its mount.
            return Response(status: .movedPermanently, headers: [.location: prefix + "/" + rest])
        }
        return try await forward(request, context: context, app: app, rest: rest)
    }

    /// Sends the request for `rest` (a path with its query) to `app`, whichever way the app is mounted; a failure to
    /// reach the app is counted by its kind.
    func forward(_ request: Request, context: SignedInRequestContext, app: AppConfiguration, rest: String) async throws -> Response {
        // A kept form's address, marked: the form goes to the app now, once (`KeptForms`).
        if let (id, target) = KeptForms.marked(rest) {
            guard request.method == .get, let keptForms,
                let form = try await keptForms.take(id: id, sub: context.session.identity.sub, app: app, target: target)
            else { throw KeptFormError.gone }
            context.logger.info("kept form sent", metadata: ["app": .string(app.slug)])
            let origin = keptForms.origin(of: app, publicOrigin: configuration.publicOrigin)
            return try await forward(KeptForms.request(form, app: app, browser: request, origin: origin), context: context, app: app, rest: form.target)
        }
        do {
            return try await forwardUncounted(request, context: context, app: app, rest: rest)
        } catch let error as ProxyError {
            if let kind = error.upstreamFailureKind { metrics.upstreamFailure(app: app.slug, kind: kind) }
            throw error
        }
    }

    private func forwardUncounted(_ request: Request, context: SignedInRequestContext, app: AppConfiguration, rest: String) async throws
        -> Response
    {
        // Where a sign-in again or the upgrade brings the member back: this page (on an app host, through the host's
        // handoff).
        let returnTo =
            app.mount == .path ? request.uri.description : FormEncoding.url(Paths.appsOpen + "/" + app.slug, adding: [("to", rest)])
        let access: AppAccess.Forwarding
        do {
            access = try await tracer.span("access decision") {
                try await self.access.open(
                    app, rest: rest, method: request.method.rawValue, session: context.session, moment: context.accessMoment, returnTo: returnTo)
            }
        } catch let error as AccessError where error.stepUpURL != nil {
            // A form posted when the path asks the member to prove themselves again waits for them.
            guard let kept = await keptForms?.keep(
                request, sub: context.session.identity.sub, app: app, rest: rest, origins: self.access.origins, logger: context.logger)
            else { throw error }
            throw error.returning(to: kept)
        }
        try access.checkOrigin(method: request.method, browser: request.headers)
        let cookie = try await jars.cookieHeader(sessionID: access.session.id, for: access.origin)
        var headers = access.requestHeaders(from: request.headers, clientAddress: context.clientAddress, cookie: cookie, trace: context.trace)
        if let encodings = HeaderHygiene.acceptEncoding(browser: AcceptEncoding(request.headers[.acceptEncoding])) {
            headers[.acceptEncoding] = encodings
        }

        let upstream = try await tracer.span("upstream exchange", ofKind: .client) {
            try await forwarder.send(
                method: request.method, target: access.target, headers: headers, body: request.body,
                contentLength: request.headers[.contentLength].flatMap { Int($0) })
        }
        // On an app host the bar's files and links must name the gateway's own origin.
        let gatewayBase = app.mount == .host && catalog.appsDomain != nil ? configuration.publicOrigin : ""
        access.logRemovedHeaders(status: upstream.status.code, browser: request.headers, logger: context.logger)
        return try await respond(
            upstream, to: request, app: app, url: access.url, origin: access.origin, urls: access.urls, gatewayBase: gatewayBase,
            clientCookies: access.clientCookies, context: context)
    }

    func respond(
        _ upstream: Forwarder.Upstream, to request: Request, app: AppConfiguration, url: URL, origin: CookieOrigin, urls: URLRewriter,
        gatewayBase: String, clientCookies: ClientCookies?, context: SignedInRequestContext
    ) async throws -> Response {
        try await jars.absorb(setCookies: upstream.headers[values: .setCookie], from: origin, sessionID: context.session.id)
        var copies: [String] = []
        if let clientCookies {
            let jar = try await jars.jar(sessionID: context.session.id)
            copies = clientCookies.settings(jar: jar, origin: origin, browserCookies: request.headers[values: .cookie])
        }
        let plan = try mapping.plan(
            app: app, status: upstream.status, upstream: upstream.headers, isHEAD: request.method == .head,
            isNavigation: GatewayBar.isDocumentNavigation(method: request.method, headers: request.headers),
            acceptsGzip: AcceptEncoding(request.headers[.acceptEncoding]).takesGzip, url: url, urls: urls, clientCookies: copies,
            session: context.session, memberURI: request.uri.description, gatewayBase: gatewayBase, bar: bar, logger: context.logger)
        if let headers = plan.headersNow {
            let body = TransformedBody(upstream: upstream.body, plan: nil)
            return Response(status: upstream.status, headers: headers, body: stream(body, app: app, logger: context.logger))
        }
        let body = TransformedBody(upstream: upstream.body, plan: plan)
        // The first chunk is read and decided on before the head goes out (`AnswerPlan.start`).
        let headers = try await body.start()
        return Response(status: upstream.status, headers: headers, body: stream(body, app: app, logger: context.logger))
    }

    /// The answer's body into the member's connection. Once the head is out, an upstream that fails can only be told
    /// by breaking the connection: the member's response ends incomplete (no final chunk, or fewer bytes than its
    /// length), and the failure is logged and counted as `reset`, whatever the content type. A member who goes away
    /// (the write fails, or the request is cancelled) is no failure of the app's.
    func stream(_ body: TransformedBody, app: AppConfiguration, logger: Logger) -> ResponseBody {
        let metrics = metrics
        return ResponseBody { writer in
            while true {
                let chunk: ByteBuffer?
                do {
                    chunk = try await body.next()
                } catch {
                    if !Task.isCancelled, !(error is CancellationError) {
                        logger.warning("upstream body failed", metadata: ["app": .string(app.slug), "error": .string("\(error)")])
                        metrics.upstreamFailure(app: app.slug, kind: .reset)
                    }
                    throw error
                }
                guard let chunk else { break }
                if chunk.readableBytes > 0 { try await writer.write(chunk) }
            }
            try await writer.finish(nil)
        }
    }
}

/// An upstream body on its way to the member, through its answer's plan (`AnswerPlan`) or (without one) as it is. The
/// first chunk of a planned body is read before the response head is sent (`start`), the rest by the response body's writer:
/// one reader after the other, never two at once, which is what makes the unchecked `Sendable` sound.
final class TransformedBody: @unchecked Sendable {
    private var upstream: HTTPClientResponse.Body.AsyncIterator
    /// `nil` when the body passes through untouched.
    private var plan: AnswerPlan?
    private var pending: ByteBuffer?
    private var upstreamEnded = false
    private var finished = false

    init(upstream: HTTPClientResponse.Body, plan: AnswerPlan?) {
        self.upstream = upstream.makeAsyncIterator()
        self.plan = plan
    }

    /// Reads the first chunk and decides with the plan how the body goes out: the member's head.
    func start() async throws -> HTTPFields {
        let first: ByteBuffer?
        do {
            first = try await upstream.next()
        } catch {
            throw ProxyError.upstreamReset("the page's body failed: \(error)")
        }
        if first == nil { upstreamEnded = true }  // an empty body: the iterator is not asked again
        guard plan != nil else { preconditionFailure("a body that passes through is not started") }
        let (headers, out) = try plan!.start(first)
        pending = out
        return headers
    }

    func next() async throws -> ByteBuffer? {
        if let pending {
            self.pending = nil
            return pending
        }
        guard !finished else { return nil }
        guard !upstreamEnded, let chunk = try await upstream.next() else {
            finished = true
            return plan?.end()
        }
        return try plan?.body(chunk) ?? chunk
    }
}
