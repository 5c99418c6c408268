import Hummingbird

/// Counts every request by route class, status class and app, and times it to its response head
/// (`gatehouse_http_requests_total`, `gatehouse_http_request_duration_seconds`). It runs first, outside the error
/// pages, so it sees the status the browser got; the app label is only ever a configured app's slug.
struct RequestMetricsMiddleware<Context: RequestContext>: RouterMiddleware {
    let metrics: GatewayMetrics
    let catalog: AppCatalog

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let started = ContinuousClock.now
        let (route, app) = classify(request)
        do {
            let response = try await next(request, context)
            metrics.request(route: route, status: response.status.code, app: app, duration: .now - started)
            return response
        } catch {
            let status = (error as? any HTTPResponseError)?.status.code ?? 500
            metrics.request(route: route, status: status, app: app, duration: .now - started)
            throw error
        }
    }

    func classify(_ request: Request) -> (RouteClass, String) {
        if let app = catalog.hostMountedApp(authority: request.head.authority) { return (.proxy, app.slug) }
        let path = request.uri.path
        let route = RouteClass.of(path: path)
        guard route == .proxy else { return (route, "") }
        // `/apps/<slug>/…` or `/apps-open/<slug>`: the slug only when it names a configured app.
        let slug = path.split(separator: "/", maxSplits: 2, omittingEmptySubsequences: true).dropFirst().first.map(String.init) ?? ""
        return (route, catalog.app(slug) != nil ? slug : "")
    }
}
