import Hummingbird

/// Sends every request for an app host to the host-mounted app; nothing of the gateway's own (pages, static files,
/// the development provider) is reachable on an app host.
public struct HostMountMiddleware: RouterMiddleware {
    public typealias Context = GatewayRequestContext
    let controller: HostMountController

    public init(controller: HostMountController) {
        self.controller = controller
    }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let appsDomain = controller.catalog.appsDomain, let authority = request.head.authority,
            let slug = appsDomain.slug(inAuthority: authority)
        else { return try await next(request, context) }
        guard let app = controller.catalog.hostMountedApp(authority: authority) else {
            throw controller.catalog.turnedOff[slug] != nil ? ProxyError.missing(slug, in: controller.catalog) : ProxyError.unknownApp(authority)
        }
        return try await controller.handle(request, context: context, app: app)
    }
}
