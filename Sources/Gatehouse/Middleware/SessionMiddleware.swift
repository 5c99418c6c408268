import GatehouseCore
import Hummingbird

/// Puts the session the cookie names, if it is alive, into the request context.
public struct SessionMiddleware: RouterMiddleware {
    public typealias Context = GatewayRequestContext

    let resolver: SessionResolver
    let cookieName: String
    let tracer: GatewayTracer?

    init(resolver: SessionResolver, cookieName: String, tracer: GatewayTracer? = nil) {
        self.resolver = resolver
        self.cookieName = cookieName
        self.tracer = tracer
    }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        let cookie = request.cookies[cookieName]?.value
        let resolution = try await tracer.span("session look-up") { try await resolver.resolve(cookie: cookie) }
        switch resolution {
        case .active(let session):
            context.session = session
        case .expired:
            context.sessionEnded = true
        case .none:
            break
        }
        if request.method == .get || request.method == .head {
            context.returnTarget = ReturnTarget(request.uri.description)?.path
        }
        return try await next(request, context)
    }
}
