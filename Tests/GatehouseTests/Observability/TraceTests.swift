import Foundation
import GatehouseCore
import Testing

@testable import Gatehouse

/// W3C trace context through the gateway: apps get a `traceparent` whose parent is the gateway's span, in the
/// caller's trace only when a trusted proxy sent it, on the data plane's way, the application's and WebSockets.
@Suite(.serialized) struct TraceTests {
    static let incoming = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

    static func traceparent(_ reply: LiveGateway.Reply) throws -> TraceContext {
        let header = try #require(try ProxyTests.report(reply).headers["traceparent"]?.first)
        return try #require(TraceContext.continuing(header))
    }

    @Test func aClientDoesNotChooseTheTraceButATrustedProxyDoes() async throws {
        try await ProxyTests.withProxy { gateway, _ in
            let cookies = try await ProxyTests.signedIn(gateway)
            let page = try Self.traceparent(try await gateway.get("/apps/echo/echo/", cookies: cookies, headers: [("traceparent", Self.incoming)]))
            #expect(page.traceID != "4bf92f3577b34da6a3ce929d0e0e4736" && gateway.servedByDataPlane("echo") == 1)
            let posted = try Self.traceparent(
                try await gateway.send(.POST, "/apps/echo/echo/", cookies: cookies, headers: [("traceparent", Self.incoming)], body: "x"))
            #expect(posted.traceID != "4bf92f3577b34da6a3ce929d0e0e4736" && posted.traceID != page.traceID)
        }
        try await ProxyTests.withProxy(configure: { $0.listen.trustedProxies = ["127.0.0.1"] }) { gateway, _ in
            let cookies = try await ProxyTests.signedIn(gateway)
            for reply in [
                try await gateway.get("/apps/echo/echo/", cookies: cookies, headers: [("traceparent", Self.incoming)]),
                try await gateway.send(.POST, "/apps/echo/echo/", cookies: cookies, headers: [("traceparent", Self.incoming)], body: "x"),
            ] {
                let child = try Self.traceparent(reply)
                // The caller's trace; the gateway's own span as the app's parent.
                #expect(child.traceID == "4bf92f3577b34da6a3ce929d0e0e4736" && child.parentSpanID != "00f067aa0ba902b7" && child.flags == "01")
            }
            let malformed = try Self.traceparent(
                try await gateway.get("/apps/echo/echo/", cookies: cookies, headers: [("traceparent", "00-0000-bad-01")]))
            #expect(malformed.traceID.count == 32)
            let messages = try await ProxyTests.webSocket(gateway, cookies: cookies, path: "ws-headers", send: [])
            let upgrade = try ProxyTests.report(json: try #require(messages.first)).headers
            #expect(upgrade["traceparent"]?.first.flatMap(TraceContext.continuing) != nil)
        }
    }
}
