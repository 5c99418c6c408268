import Foundation
import GatehouseCore
import OTel
import ServiceLifecycle
import Tracing

/// The gateway's own spans, exported with swift-otel over OTLP/HTTP (JSON) when `tracing.otlp_endpoint` is set:
/// a request, and inside it the access decision, the upstream exchange, the session's store look-up and a token
/// refresh. The request's span is in the caller's trace when a trusted proxy sent `traceparent`; apps get the
/// request's span as their parent, so a request is followed from the gateway into the app.
struct GatewayTracer: Sendable {
    let tracer: any Tracer
    let service: any Service

    static func make(_ configuration: TracingConfiguration) throws -> GatewayTracer? {
        guard let endpoint = configuration.otlpEndpoint else { return nil }
        var otel = OTel.Configuration.default
        otel.serviceName = configuration.serviceName
        otel.logs.enabled = false
        otel.metrics.enabled = false
        otel.traces.enabled = true
        otel.traces.otlpExporter.protocol = .httpJSON
        otel.traces.otlpExporter.endpoint = endpoint.absoluteString.trimmingSuffix("/") + "/v1/traces"
        let backend = try OTel.makeTracingBackend(configuration: otel)
        return GatewayTracer(tracer: backend.factory, service: backend.service)
    }

    /// The span of a request, a child of `incoming` (the caller's span a trusted proxy named) when given, and the trace
    /// context apps get: its trace, this span as their parent.
    func startRequest(_ name: String, incoming: TraceContext?) -> (span: any Span, trace: TraceContext) {
        var context = ServiceContext.topLevel
        if let incoming, let parent = incoming.parentSpanID {
            tracer.extract(
                ["traceparent": "00-\(incoming.traceID)-\(parent)-\(incoming.flags)"], into: &context, using: DictionaryExtractor())
        }
        let span = Self.start(tracer, name, context: context, ofKind: .server)
        let own = traceContext(of: span) ?? .start()
        return (span, TraceContext(traceID: own.traceID, spanID: own.spanID, parentSpanID: incoming?.parentSpanID, flags: own.flags))
    }

    /// `span` as a trace context: its trace and its own id, as the tracer writes them into `traceparent`.
    func traceContext(of span: any Span) -> TraceContext? {
        var carrier: [String: String] = [:]
        tracer.inject(span.context, into: &carrier, using: DictionaryInjector())
        return TraceContext.named(by: carrier["traceparent"])
    }

    /// A span inside the current request's (the task's service context, which `TraceMiddleware` sets).
    func withSpan<T, E: Error>(_ name: String, ofKind kind: SpanKind = .internal, _ body: () async throws(E) -> T) async throws(E) -> T {
        let span = Self.start(tracer, name, context: ServiceContext.current ?? .topLevel, ofKind: kind)
        defer { span.end() }
        do {
            return try await body()
        } catch {
            span.recordError(error)
            throw error
        }
    }

    /// A span inside `parent`, ended by the caller (the data plane's upstream exchange, on its event loop).
    func startChild(_ name: String, of parent: any Span, ofKind kind: SpanKind) -> any Span {
        Self.start(tracer, name, context: parent.context, ofKind: kind)
    }

    /// A span of `tracer` (the existential opened: its own `startSpan`, not the deprecated `startAnySpan`).
    private static func start<T: Tracer>(_ tracer: T, _ name: String, context: ServiceContext, ofKind kind: SpanKind) -> any Span {
        tracer.startSpan(name, context: context, ofKind: kind, at: DefaultTracerClock.now, function: #function, file: #fileID, line: #line)
    }
}

extension Optional where Wrapped == GatewayTracer {
    /// `body` inside a span of its own when the gateway exports spans, as it is otherwise.
    func span<T, E: Error>(_ name: String, ofKind kind: SpanKind = .internal, _ body: () async throws(E) -> T) async throws(E) -> T {
        guard let self else { return try await body() }
        return try await self.withSpan(name, ofKind: kind, body)
    }
}

struct DictionaryExtractor: Extractor {
    func extract(key: String, from carrier: [String: String]) -> String? { carrier[key] }
}

struct DictionaryInjector: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) { carrier[key] = value }
}

extension String {
    fileprivate func trimmingSuffix(_ suffix: String) -> String {
        hasSuffix(suffix) ? String(dropLast(suffix.count)) : self
    }
}
