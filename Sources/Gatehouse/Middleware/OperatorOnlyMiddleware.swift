import Hummingbird

/// The console's pages and their JSON twins: a member without `operator.role` gets "This page is for operators" (or
/// its JSON) before any of them runs. On the router group the console's controllers add their routes to.
struct OperatorOnlyMiddleware: RouterMiddleware {
    typealias Context = SignedInRequestContext
    let configuration: GatehouseConfiguration

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        try configuration.requireOperator(context.session.identity)
        return try await next(request, context)
    }
}
