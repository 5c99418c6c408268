import Foundation
import Testing

@testable import Gatehouse

/// WebSocket upgrades as browsers and other clients send them, byte for byte over a plain socket: after other
/// requests on a kept-alive connection, with subprotocols and extensions that the page and the app negotiate through
/// the gateway.
@Suite struct WebSocketTunnelTests {
    static func upgrade(_ gateway: LiveGateway, cookies: [String: String], path: String = "/apps/echo/ws", extra: String = "") -> String {
        "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(gateway.port)\r\nOrigin: http://127.0.0.1:\(gateway.port)\r\n"
            + "Cookie: \(cookies.map { "\($0)=\($1)" }.joined(separator: "; "))\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\(extra)\r\n"
    }

    /// A client's text frame: masked, as RFC 6455 §5.3 requires.
    static func maskedText(_ text: String) -> [UInt8] {
        let payload = Array(text.utf8)
        let key: [UInt8] = [0x37, 0xFA, 0x21, 0x3D]
        let length: [UInt8] =
            payload.count < 126 ? [0x80 | UInt8(payload.count)] : [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        return [0x81] + length + key + payload.enumerated().map { $0.element ^ key[$0.offset % 4] }
    }

    @Test func anUpgradeAfterOtherRequestsOnAKeptAliveConnectionIsRelayed() async throws {
        try await ProxyTests.withProxy { gateway, _ in
            let cookies = try await ProxyTests.signedIn(gateway)
            let socket = try RawSocket(port: gateway.port)
            defer { socket.close() }
            let cookie = cookies.map { "\($0)=\($1)" }.joined(separator: "; ")
            // Two requests first: one the data plane answers, one the application does (the portal).
            socket.send("GET /apps/echo/echo HTTP/1.1\r\nHost: 127.0.0.1:\(gateway.port)\r\nCookie: \(cookie)\r\n\r\n")
            socket.send("GET / HTTP/1.1\r\nHost: 127.0.0.1:\(gateway.port)\r\nCookie: \(cookie)\r\n\r\n")
            let pages = await socket.readUntilClosed(timeout: .seconds(2))
            #expect(!pages.closed && pages.text.components(separatedBy: "HTTP/1.1 200 OK").count == 3)

            socket.send(Self.upgrade(gateway, cookies: cookies))
            let opened = await socket.readUntilClosed(timeout: .seconds(2))
            #expect(!opened.closed && opened.text.hasPrefix("HTTP/1.1 101 Switching Protocols\r\n"))
            // The accept key of RFC 6455's own example: the app's answer to the browser's key, passed on.
            #expect(opened.text.contains("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"))
            #expect(opened.text.contains("user=\(DevelopmentAccounts.all[0].sub)"))

            socket.send(Self.maskedText("hi"))
            let echoed = await socket.readUntilClosed(timeout: .seconds(2))
            #expect(echoed.bytes == [0x81, 8] + Array("echo: hi".utf8))
        }
    }

    @Test func subprotocolsAndExtensionsAreNegotiatedBetweenThePageAndTheApp() async throws {
        try await ProxyTests.withProxy { gateway, _ in
            let cookies = try await ProxyTests.signedIn(gateway)
            let socket = try RawSocket(port: gateway.port)
            defer { socket.close() }
            socket.send(
                Self.upgrade(
                    gateway, cookies: cookies,
                    extra: "Sec-WebSocket-Protocol: chat, superchat\r\nSec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n"))
            let opened = await socket.readUntilClosed(timeout: .seconds(2))
            let head = opened.text.components(separatedBy: "\r\n\r\n")[0].lowercased()
            #expect(head.hasPrefix("http/1.1 101 switching protocols\r\n"))
            #expect(head.contains("\r\nsec-websocket-protocol: chat"))
            #expect(head.contains("\r\nsec-websocket-extensions: permessage-deflate"))
            // Nothing of the app's answer but its handshake reaches the browser.
            #expect(head.components(separatedBy: "\r\n").dropFirst().allSatisfy { $0.hasPrefix("sec-websocket-") || $0.hasPrefix("upgrade:") || $0.hasPrefix("connection:") })

            // The app compresses its messages (RSV1 set) and the browser's side takes them as they are.
            socket.send(Self.maskedText(String(repeating: "hello ", count: 200)))
            let reply = await socket.readUntilClosed(timeout: .seconds(2))
            #expect(reply.bytes.first == 0xC1)
        }
    }
}
