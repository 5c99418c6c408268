import GatehouseCore
import Hummingbird

/// Puts the session the cookie names, if it is alive, into the request context.
public struct SessionMiddleware: RouterMiddleware {
    public typealias Context = GatewayRequestContext

    let resolver: SessionResolver
    let cookieName: String

    public init(resolver: SessionResolver, cookieName: String) {
        self.resolver = resolver
        self.cookieName = cookieName
    }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        switch try await resolver.resolve(cookie: request.cookies[cookieName]?.value) {
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
