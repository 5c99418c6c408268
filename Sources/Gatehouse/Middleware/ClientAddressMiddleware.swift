import Hummingbird

/// Puts the client a trusted load balancer names into the context, before anything logs, limits or forwards it.
/// Added only when the operator lists trusted proxies: otherwise the peer the context starts with is the client.
struct ClientAddressMiddleware: RouterMiddleware {
    let resolver: ClientAddressResolver

    func handle(
        _ request: Request, context: GatewayRequestContext, next: (Request, GatewayRequestContext) async throws -> Response
    ) async throws -> Response {
        var context = context
        context.clientAddress = resolver.resolve(peer: context.clientAddress, forwardedFor: request.headers[values: .xForwardedFor])
        return try await next(request, context)
    }
}
