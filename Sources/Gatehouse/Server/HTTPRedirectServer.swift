import Foundation
import GatehouseCore
import Hummingbird
import Logging

/// The optional plain-HTTP listener beside an HTTPS one (`listen.redirect_http_port`): every request is sent to the
/// same path on the public https origin (`301` for GET and HEAD, `308` for the rest, so that a form keeps its method
/// and body), except `/healthz`, which a load balancer may still ask over HTTP. Nothing else is served here: no page,
/// no cookie, no `Strict-Transport-Security` (browsers take it from the https side only).
enum HTTPRedirectServer {
    static func application(publicOrigin: String, host: String, port: Int, logger: Logger) -> some ApplicationProtocol {
        let router = Router()
        router.add(middleware: RedirectToHTTPS(publicOrigin: publicOrigin))
        router.get(RouterPath(stringLiteral: Paths.health)) { _, _ in PlainTextResponse.make("ok\n") }
        var logger = logger
        logger[metadataKey: "listener"] = "redirect"
        return Application(router: router, configuration: .init(address: .hostname(host, port: port), serverName: nil), logger: logger)
    }

    struct RedirectToHTTPS<Context: RequestContext>: RouterMiddleware {
        let publicOrigin: String

        func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
            if request.uri.path == Paths.health && request.method == .get { return try await next(request, context) }
            return Response(
                status: request.method == .get || request.method == .head ? .movedPermanently : .permanentRedirect,
                headers: [.location: Self.location(publicOrigin: publicOrigin, target: request.uri.description), .cacheControl: "no-store"])
        }

        /// The public origin and the request's own path and query; a request target that is not a path (`*`, an
        /// absolute URL a proxy would take) goes to the origin's root: the host is never the request's.
        static func location(publicOrigin: String, target: String) -> String {
            guard target.hasPrefix("/"), !target.contains(where: { $0.isWhitespace || $0.asciiValue.map { $0 < 0x20 || $0 == 0x7F } == true })
            else { return publicOrigin + "/" }
            return publicOrigin + target
        }
    }
}
