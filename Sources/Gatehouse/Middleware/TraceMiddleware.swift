import GatehouseCore
import Hummingbird
import Tracing

/// Gives every request its trace (`GatewayRequestContext.trace`) and writes its trace id on every log line of the
/// request, the access log's included.
struct TraceMiddleware: RouterMiddleware {
    typealias Context = GatewayRequestContext
    let resolver: ClientAddressResolver
    /// With a collector: the request's span, exported, with the spans made inside it as children.
    let tracer: GatewayTracer?

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        func joining(_ trace: TraceContext) {
            context.trace = trace
            context.logger[metadataKey: "trace_id"] = .string(trace.traceID)
        }
        let incoming = resolver.incomingTrace(peer: context.peerAddress, traceparent: request.headers[HeaderHygiene.traceparent])
        guard let tracer else {
            joining(incoming ?? .start())
            return try await next(request, context)
        }
        let (span, trace) = tracer.startRequest("\(request.method.rawValue) \(RouteClass.of(path: request.uri.path).rawValue)", incoming: incoming)
        joining(trace)
        defer { span.end() }
        do {
            let response = try await ServiceContext.withValue(span.context) { try await next(request, context) }
            span.attributes["http.response.status_code"] = Int(response.status.code)
            return response
        } catch {
            span.recordError(error)
            throw error
        }
    }
}
