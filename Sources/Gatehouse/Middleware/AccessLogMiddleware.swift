import Hummingbird
import Logging

/// Counts, times and logs every request the application answers (`RequestLog`). It runs first, outside the
/// error pages, so it sees the status the browser got; the app is only ever a configured app's slug.
struct AccessLogMiddleware<Context: RequestContext>: RouterMiddleware {
    let metrics: GatewayMetrics
    let catalog: AppCatalog
    /// `oidc.redirect_path`, which the operator may have put outside `/auth`: a sign-in route all the same.
    let callbackPath: String

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let started = ContinuousClock.now
        let (route, app) = classify(request)
        do {
            let response = try await next(request, context)
            record(request, context: context, route: route, app: app, status: response.status.code, duration: .now - started)
            return response
        } catch {
            let status = (error as? any HTTPResponseError)?.status.code ?? 500
            record(request, context: context, route: route, app: app, status: status, duration: .now - started)
            throw error
        }
    }

    func record(_ request: Request, context: Context, route: RouteClass, app: String, status: Int, duration: Duration) {
        RequestLog.record(
            metrics: metrics, logger: context.logger, method: request.method.rawValue, path: request.uri.path, route: route, app: app,
            status: status, duration: duration)
    }

    func classify(_ request: Request) -> (RouteClass, String) {
        if let app = catalog.hostMountedApp(authority: request.head.authority) { return (.proxy, app.slug) }
        let path = request.uri.path
        let route = path == callbackPath ? .signIn : RouteClass.of(path: path)
        guard route == .proxy else { return (route, "") }
        // `/apps/<slug>/…` or `/apps-open/<slug>`: the slug only when it names a configured app.
        let slug = path.split(separator: "/", maxSplits: 2, omittingEmptySubsequences: true).dropFirst().first.map(String.init) ?? ""
        return (route, catalog.app(slug) != nil ? slug : "")
    }
}
