import GatehouseCore
import Hummingbird

/// Gives every request its trace (`GatewayRequestContext.trace`) and writes its trace id on every log line of the
/// request, the access log's included.
struct TraceMiddleware: RouterMiddleware {
    typealias Context = GatewayRequestContext
    let resolver: ClientAddressResolver

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        let trace = resolver.trace(peer: context.peerAddress, traceparent: request.headers[HeaderHygiene.traceparent])
        context.trace = trace
        context.logger[metadataKey: "trace_id"] = .string(trace.traceID)
        return try await next(request, context)
    }
}
