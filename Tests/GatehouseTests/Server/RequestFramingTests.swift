import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

@testable import Gatehouse

/// Malformed HTTP/1 framing over raw sockets (RFC 9112): every case gets its status and a closed connection within
/// a second, and nothing of a refused request reaches an app.
@Suite(.serialized) struct RequestFramingTests {
    static func head(_ lines: [String], body: String = "") -> [UInt8] {
        Array((lines.joined(separator: "\r\n") + "\r\n\r\n" + body).utf8)
    }

    static let cases: [(String, [UInt8], Int)] = [
        ("CL and TE", head(["POST /healthz HTTP/1.1", "Host: a", "Content-Length: 5", "Transfer-Encoding: chunked"], body: "0\r\n\r\n"), 400),
        ("TE and CL", head(["POST /healthz HTTP/1.1", "Host: a", "Transfer-Encoding: chunked", "Content-Length: 5"], body: "0\r\n\r\n"), 400),
        ("two CL", head(["POST /healthz HTTP/1.1", "Host: a", "Content-Length: 5", "Content-Length: 6"], body: "hello"), 400),
        ("two equal CL", head(["POST /healthz HTTP/1.1", "Host: a", "Content-Length: 5", "Content-Length: 5"], body: "hello"), 400),
        ("list CL", head(["POST /healthz HTTP/1.1", "Host: a", "Content-Length: 5, 5"], body: "hello"), 400),
        ("signed CL", head(["POST /healthz HTTP/1.1", "Host: a", "Content-Length: +5"], body: "hello"), 400),
        ("negative CL", head(["POST /healthz HTTP/1.1", "Host: a", "Content-Length: -5"], body: "hello"), 400),
        ("hex CL", head(["POST /healthz HTTP/1.1", "Host: a", "Content-Length: 0x5"], body: "hello"), 400),
        ("overflowing CL", head(["POST /healthz HTTP/1.1", "Host: a", "Content-Length: 99999999999999999999999"], body: "hello"), 400),
        ("CL with space inside", head(["POST /healthz HTTP/1.1", "Host: a", "Content-Length: 1 0"], body: "hello"), 400),
        ("TE xchunked", head(["POST /healthz HTTP/1.1", "Host: a", "Transfer-Encoding: xchunked"], body: "0\r\n\r\n"), 400),
        ("TE chunked, identity", head(["POST /healthz HTTP/1.1", "Host: a", "Transfer-Encoding: chunked, identity"], body: "0\r\n\r\n"), 400),
        ("TE space before colon", head(["POST /healthz HTTP/1.1", "Host: a", "Transfer-Encoding : chunked"], body: "0\r\n\r\n"), 400),
        (
            "TE twice chunked",
            head(["POST /healthz HTTP/1.1", "Host: a", "Transfer-Encoding: chunked", "Transfer-Encoding: chunked"], body: "0\r\n\r\n"), 400
        ),
        ("TE with tab junk", head(["POST /healthz HTTP/1.1", "Host: a", "Transfer-Encoding: \u{0B}chunked"], body: "0\r\n\r\n"), 400),
        ("TE gzip, chunked", head(["POST /healthz HTTP/1.1", "Host: a", "Transfer-Encoding: gzip, chunked"], body: "0\r\n\r\n"), 501),
        ("TE in HTTP/1.0", head(["POST /healthz HTTP/1.0", "Host: a", "Transfer-Encoding: chunked"], body: "0\r\n\r\n"), 400),
        ("obs-fold", head(["GET /healthz HTTP/1.1", "Host: a", "X-A: b", " c"]), 400),
        ("whitespace before colon", head(["GET /healthz HTTP/1.1", "Host: a", "X-A : b"]), 400),
        ("bare LF", Array("GET /healthz HTTP/1.1\nHost: a\n\n".utf8), 400),
        ("duplicate Host", head(["GET /healthz HTTP/1.1", "Host: a", "Host: b"]), 400),
        ("Host with userinfo", head(["GET /healthz HTTP/1.1", "Host: user@a"]), 400),
        ("Host with path", head(["GET /healthz HTTP/1.1", "Host: a/b"]), 400),
        ("Host with bad port", head(["GET /healthz HTTP/1.1", "Host: a:80x"]), 400),
        ("Host with empty port", head(["GET /healthz HTTP/1.1", "Host: a:"]), 400),
        ("Host with long port", head(["GET /healthz HTTP/1.1", "Host: a:123456"]), 400),
        ("Host with space", head(["GET /healthz HTTP/1.1", "Host: a b"]), 400),
        ("Host after IPv6 literal", head(["GET /healthz HTTP/1.1", "Host: [::1]x"]), 400),
        ("Host not ASCII", head(["GET /healthz HTTP/1.1", "Host: caf\u{E9}.example"]), 400),
        ("no Host in HTTP/1.1", head(["GET /healthz HTTP/1.1"]), 400),
        ("unknown method", head(["BREW /healthz HTTP/1.1", "Host: a"]), 501),
        ("bad chunk size", head(["POST /healthz HTTP/1.1", "Host: a", "Transfer-Encoding: chunked"], body: "zz\r\nhello\r\n0\r\n\r\n"), 400),
        ("signed chunk size", head(["POST /healthz HTTP/1.1", "Host: a", "Transfer-Encoding: chunked"], body: "-5\r\nhello\r\n0\r\n\r\n"), 400),
        ("bad version", head(["GET /healthz HTTP/9.9", "Host: a"]), 400),
        ("request target too long", head(["GET /healthz?" + String(repeating: "a", count: 10_000) + " HTTP/1.1", "Host: a"]), 414),
        (
            "a megabyte of headers",
            head(["GET /healthz HTTP/1.1", "Host: a"] + (0..<1000).map { "X-\($0): " + String(repeating: "a", count: 1000) }), 431
        ),
        ("one huge header", head(["GET /healthz HTTP/1.1", "Host: a", "X-A: " + String(repeating: "a", count: 100_000)]), 431),
    ]

    /// Closed at once, not after the header timeout (10 s): the bound leaves a loaded machine a few seconds.
    @Test func everyMalformedRequestGetsItsStatusAndAClosedConnectionAtOnce() async throws {
        try await LiveGateway.run { gateway in
            for (name, bytes, status) in Self.cases {
                let outcome = try await RawSocket.exchange(port: gateway.port, bytes)
                #expect(outcome.status == status, "\(name): \(outcome.text.prefix(40))")
                #expect(outcome.closed, "\(name): the connection stayed open")
                #expect(outcome.elapsed < .seconds(4), "\(name)")
            }
            // A well-formed request on the same listener still works, and keeps its connection.
            // Kept open: read for a while (long enough for a busy machine to answer) and see no close.
            let fine = try await RawSocket.exchange(port: gateway.port, Self.head(["GET /healthz HTTP/1.1", "Host: a"]), timeout: .seconds(2))
            #expect(fine.status == 200 && !fine.closed)
            let old = try await RawSocket.exchange(port: gateway.port, Self.head(["GET /healthz HTTP/1.0"]))
            #expect(old.status == 200)
        }
    }

    @Test func slowAndIdleConnectionsAreClosed() async throws {
        try await LiveGateway.run(configure: {
            $0.listen.headerTimeoutSeconds = 1
            $0.listen.idleTimeoutSeconds = 1
        }) { gateway in
            // Half a head: 408 once the header timeout passes.
            let half = try RawSocket(port: gateway.port)
            half.send("GET /healthz HTTP/1.1\r\nHost: a\r\n")
            let halfOutcome = await half.readUntilClosed(timeout: .seconds(8))
            half.close()
            #expect(halfOutcome.status == 408 && halfOutcome.closed)

            // Slowloris: a header line every 300 ms never completes the head; the timeout counts from the first byte.
            let slow = try RawSocket(port: gateway.port)
            slow.send("GET /healthz HTTP/1.1\r\n")
            for index in 0..<5 {
                try await Task.sleep(for: .milliseconds(300))
                slow.send("X-\(index): a\r\n")
            }
            let slowOutcome = await slow.readUntilClosed(timeout: .seconds(8))
            slow.close()
            #expect(slowOutcome.status == 408 && slowOutcome.closed)

            // Nothing at all: closed without an answer after the idle timeout; the same after a finished request.
            // (Bounds generous enough for a loaded machine; without the timeout these would never close.)
            let idle = try await RawSocket.exchange(port: gateway.port, [], timeout: .seconds(8))
            #expect(idle.closed && idle.text.isEmpty && idle.elapsed < .seconds(6))
            let kept = try await RawSocket.exchange(port: gateway.port, Self.head(["GET /healthz HTTP/1.1", "Host: a"]), timeout: .seconds(8))
            #expect(kept.status == 200, "\(kept.text.prefix(40))")
            #expect(kept.closed && kept.elapsed < .seconds(6), "\(kept.elapsed)")
        }
    }

    @Test func aStalledBodyIsClosedByItsDeadlineWhileOtherMembersAreServed() async throws {
        try await LiveGateway.run(configure: { $0.listen.bodyTimeoutSeconds = 1 }) { gateway in
            // Twenty requests that promise 100,000 bytes and send two: each would hold its connection for ever.
            let stalled = try (0..<20).map { _ in try RawSocket(port: gateway.port) }
            for socket in stalled {
                socket.send(
                    Self.head(
                        [
                            "POST /auth/backchannel-logout HTTP/1.1", "Host: a", "Content-Type: application/x-www-form-urlencoded",
                            "Content-Length: 100000",
                        ], body: "ab"))
            }
            // Meanwhile another member is served at once.
            let other = try await RawSocket.exchange(port: gateway.port, Self.head(["GET /healthz HTTP/1.1", "Host: a", "Connection: close"]))
            #expect(other.status == 200 && other.elapsed < .seconds(1))
            for (index, socket) in stalled.enumerated() {
                let outcome = await socket.readUntilClosed(timeout: .seconds(8))
                socket.close()
                #expect(outcome.closed, "stalled body \(index) kept its connection")
                #expect(outcome.elapsed < .seconds(6), "stalled body \(index): \(outcome.elapsed)")
            }
            // A body that keeps coming, slowly, is not cut: a byte every 300 ms for longer than the deadline.
            let slow = try RawSocket(port: gateway.port)
            slow.send(
                Self.head([
                    "POST /auth/backchannel-logout HTTP/1.1", "Host: a", "Content-Type: application/x-www-form-urlencoded", "Content-Length: 6",
                    "Connection: close",
                ]))
            for byte in "a=bcde" {
                try await Task.sleep(for: .milliseconds(300))
                slow.send(String(byte))
            }
            let slowOutcome = await slow.readUntilClosed(timeout: .seconds(8))
            slow.close()
            #expect(slowOutcome.status != nil && slowOutcome.status != 408, "\(slowOutcome.text.prefix(60))")
        }
    }

    @Test func expectContinueIsAnsweredBeforeTheBodyIsSent() async throws {
        try await LiveGateway.run { gateway in
            let socket = try RawSocket(port: gateway.port)
            defer { socket.close() }
            socket.send(
                Self.head([
                    "POST /auth/backchannel-logout HTTP/1.1", "Host: a", "Content-Type: application/x-www-form-urlencoded", "Content-Length: 5",
                    "Expect: 100-continue", "Connection: close",
                ]))
            let interim = await socket.readUntilClosed(timeout: .milliseconds(700))
            #expect(interim.text.hasPrefix("HTTP/1.1 100 Continue\r\n\r\n") && !interim.closed, "\(interim.text.prefix(60))")
            socket.send("a=bcd")
            let final = await socket.readUntilClosed(timeout: .seconds(3))
            #expect(final.status != nil && final.status != 100 && final.closed, "\(final.text.prefix(60))")
        }
        // Without a body there is nothing to continue: no interim answer.
        try await LiveGateway.run { gateway in
            let outcome = try await RawSocket.exchange(
                port: gateway.port, Self.head(["GET /healthz HTTP/1.1", "Host: a", "Expect: 100-continue", "Connection: close"]))
            #expect(outcome.status == 200 && !outcome.text.contains("100 Continue"))
        }
    }

    @Test func anHTTP10ClientGetsAnHTTP10AnswerAndAClosedConnection() async throws {
        try await LiveGateway.run { gateway in
            // No keep-alive asked for: the answer in HTTP/1.0, never chunked, and the connection closed at once.
            for path in ["/healthz", "/signin", "/static/gatehouse.css", "/nowhere"] {
                let outcome = try await RawSocket.exchange(port: gateway.port, Self.head(["GET \(path) HTTP/1.0"]), timeout: .seconds(5))
                #expect(outcome.text.hasPrefix("HTTP/1.0 "), "\(path): \(outcome.text.prefix(40))")
                #expect(!outcome.text.lowercased().contains("transfer-encoding"), "\(path)")
                #expect(outcome.closed && outcome.elapsed < .seconds(2), "\(path): \(outcome.elapsed)")
            }
            // Keep-alive asked for and an answer with a length: the connection stays for the next request.
            let socket = try RawSocket(port: gateway.port)
            defer { socket.close() }
            socket.send(Self.head(["GET /healthz HTTP/1.0", "Connection: keep-alive"]))
            let first = await socket.readUntilClosed(timeout: .seconds(1))
            #expect(first.text.hasPrefix("HTTP/1.0 200") && first.text.lowercased().contains("connection: keep-alive") && !first.closed)
            socket.send(Self.head(["GET /healthz HTTP/1.0"]))
            let second = await socket.readUntilClosed(timeout: .seconds(3))
            #expect(second.text.hasPrefix("HTTP/1.0 200") && second.closed)
        }
    }

    /// Counts the bytes anybody sends it: an app that must never be reached.
    final class Listener: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let received = NIOLockedValueBox(0)
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let bytes = unwrapInboundIn(data).readableBytes
            received.withLockedValue { $0 += bytes }
        }
    }

    @Test func aBadChunkSizeNeverSendsARequestHeadUpstream() async throws {
        let listener = Listener()
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { $0.pipeline.addHandler(listener) }
            .bind(host: "127.0.0.1", port: 0).get()
        let port = server.localAddress!.port!
        try await LiveGateway.run(configure: {
            $0.apps = [AppConfiguration(slug: "trap", name: "Trap", upstream: URL(string: "http://127.0.0.1:\(port)/")!)]
        }) { gateway in
            let cookies = try await ProxyTests.signedIn(gateway)
            let cookie = cookies.map { "\($0)=\($1)" }.joined(separator: "; ")
            for body in ["zz\r\nhello\r\n0\r\n\r\n", "ffffffffffffffffffffff\r\nx\r\n", "5;\u{0}\r\nhello\r\n0\r\n\r\n"] {
                let outcome = try await RawSocket.exchange(
                    port: gateway.port,
                    Self.head(
                        ["POST /apps/trap/upload HTTP/1.1", "Host: 127.0.0.1:\(gateway.port)", "Cookie: \(cookie)", "Transfer-Encoding: chunked"],
                        body: body), timeout: .seconds(2))
                #expect(outcome.closed)
                #expect(outcome.status == nil || outcome.status == 400, "\(outcome.text.prefix(40))")
            }
            try await Task.sleep(for: .milliseconds(200))
            #expect(listener.received.withLockedValue { $0 } == 0)
        }
        try await server.close()
    }
}
