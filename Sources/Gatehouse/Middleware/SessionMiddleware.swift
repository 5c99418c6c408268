import GatehouseCore
import Hummingbird

/// Puts the session the cookie names, if it is alive, into the request context, and settles the request's language
/// on the member's choice; a refusal below it goes to the audit trail with the member.
public struct SessionMiddleware: RouterMiddleware {
    public typealias Context = GatewayRequestContext

    let resolver: SessionResolver
    let cookieName: String
    let languages: Languages
    let tracer: GatewayTracer?
    let audit: AuditTrail?

    init(resolver: SessionResolver, cookieName: String, languages: Languages, tracer: GatewayTracer? = nil, audit: AuditTrail? = nil) {
        self.resolver = resolver
        self.cookieName = cookieName
        self.languages = languages
        self.tracer = tracer
        self.audit = audit
    }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        let cookie = request.cookies[cookieName]?.value
        let touch = SessionResolver.touches(method: request.method, path: request.uri.path)
        let client = context.clientAddress.flatMap(IPAddress.init)
        let resolution = try await tracer.span("session look-up") { try await resolver.resolve(cookie: cookie, client: client, touch: touch) }
        switch resolution {
        case .active(let session, let idle):
            context.session = session
            context.sessionIdle = idle
            RequestLanguage.settle(session, languages: languages)
        case .expired(let member):
            context.sessionEnded = true
            context.timedOutMember = member
        case .none:
            break
        }
        if request.method == .get || request.method == .head {
            context.returnTarget = ReturnTarget(request.uri.description)?.path
        }
        do {
            return try await next(request, context)
        } catch {
            // A refusal made anywhere below (an app's rules, the allowlist, a rate limit…) goes to the audit trail
            // with the member it refused.
            audit?.refusal(error, member: context.session?.identity.sub, path: request.uri.path)
            throw error
        }
    }
}
