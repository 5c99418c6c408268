import GatehouseCore
import Hummingbird

/// A form posted to a path-mounted app as its member's session runs out (idle or absolute) is kept for after the
/// sign-in (`KeptForms`), instead of being lost on the way to the sign-in page.
struct KeptFormMiddleware: RouterMiddleware {
    typealias Context = GatewayRequestContext
    let forms: KeptForms
    let origins: OriginMapping

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let required as SignInRequired where required.sessionExpired {
            guard let member = context.timedOutMember, request.method == .post, let (app, rest) = forms.catalog.appPath(request.uri.description),
                forms.catalog.isProxiedOnPaths(app),
                let kept = await forms.keep(request, sub: member, app: app, rest: rest, origins: origins, logger: context.logger)
            else { throw required }
            throw SignInRequired(returnTarget: kept, sessionExpired: true)
        }
    }
}
