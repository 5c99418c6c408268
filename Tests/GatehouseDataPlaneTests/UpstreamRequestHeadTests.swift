import NIOCore
import NIOHTTP1
import Testing

@testable import GatehouseDataPlane

/// The head the app's connection gets, as bytes: framing decided by the head alone, and nothing that could end a
/// line early.
@Suite struct UpstreamRequestHeadTests {
    static func text(_ head: UpstreamRequestHead?) -> String? { head.map { String(buffer: $0.bytes) } }

    @Test func theRequestLineHostFieldsAndLengthInOrder() {
        #expect(
            Self.text(
                UpstreamRequestHead(
                    method: .GET, target: "/a/b?c=d%20e", host: "app.internal:8080", bodyLength: 0,
                    fields: [(name: "Accept", value: "text/html"), (name: "x-forwarded-for", value: "192.0.2.1")]))
                == "GET /a/b?c=d%20e HTTP/1.1\r\nhost: app.internal:8080\r\nAccept: text/html\r\nx-forwarded-for: 192.0.2.1\r\n\r\n")
        #expect(
            Self.text(UpstreamRequestHead(method: .POST, target: "/form", host: "app", bodyLength: 4096, fields: []))
                == "POST /form HTTP/1.1\r\nhost: app\r\ncontent-length: 4096\r\n\r\n")
        // A request other than a `GET` says it has no body: without a length, a `POST` would be read as framed by
        // whatever follows.
        #expect(
            Self.text(UpstreamRequestHead(method: .DELETE, target: "/item/1", host: "app", bodyLength: 0, fields: []))
                == "DELETE /item/1 HTTP/1.1\r\nhost: app\r\ncontent-length: 0\r\n\r\n")
    }

    @Test(arguments: [
        ("/a b", "app"), ("/a\r\nX-Injected: 1", "app"), ("/a\n", "app"), ("", "app"), ("/a\u{7F}", "app"), ("/é", "app"),
        ("/", "app\r\nX-Injected: 1"), ("/", "app name"), ("/", "app\t"),
    ])
    func aTargetOrHostThatCouldBreakTheHeadIsRefused(target: String, host: String) {
        #expect(UpstreamRequestHead(method: .GET, target: target, host: host, bodyLength: 0, fields: []) == nil)
    }
}
