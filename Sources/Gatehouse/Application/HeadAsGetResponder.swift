import GatehouseCore
import HTTPTypes
import Hummingbird

/// `HEAD` as `GET` on every address of the gateway's own (RFC 9110 §9.3.2): the same status and fields, no body, so a
/// monitor that asks `HEAD /healthz` or `HEAD /` sees what a browser would get. Decided before the router matches
/// (its routes are per method); apps get `HEAD` itself (through `/apps/<slug>/…` and app hosts) and answer it as they do.
public struct HeadAsGetResponder: HTTPResponder {
    public typealias Context = GatewayRequestContext
    let router: RouterResponder<GatewayRequestContext>
    let appsDomain: AppsDomain?

    public func respond(to request: Request, context: Context) async throws -> Response {
        guard request.method == .head, !request.uri.path.hasPrefix(Paths.appsPrefix + "/"), !isAppHost(request.head.authority) else {
            return try await router.respond(to: request, context: context)
        }
        var head = request.head
        head.method = .get
        let response = try await router.respond(to: Request(head: head, body: request.body), context: context)
        // The length the body would have had (a page rendered whole), or, for one streamed, that of an empty body.
        return Response(status: response.status, headers: response.headers, body: ResponseBody())
    }

    func isAppHost(_ authority: String?) -> Bool {
        guard let appsDomain, let authority else { return false }
        return appsDomain.slug(inAuthority: authority) != nil
    }
}
