import Foundation
import GatehouseCore
import Testing

@testable import Gatehouse

/// What a hostile app can try on the way back, and a hostile name on the way there: over real sockets, with an
/// echo upstream.
@Suite(.serialized) struct ProxyHardeningTests {
    static let document = [("Sec-Fetch-Dest", "document"), ("Accept", "text/html")]

    static func respond(_ headers: [String], status: Int = 200, body: String? = nil) -> String {
        var pairs = headers.map { ("h", $0) } + [("status", "\(status)")]
        if let body { pairs.append(("body", body)) }
        return FormEncoding.url("/apps/echo/respond", adding: pairs)
    }

    @Test func refreshLinkAndSetCookie2HeadersNeverLeadOutside() async throws {
        try await ProxyTests.withProxy { gateway, upstream in
            let cookies = try await ProxyTests.signedIn(gateway)
            // Another host: through the leaving page (`LeavingTests`); another scheme: dropped.
            for (hostile, kept) in [
                ("Refresh: 0; url=https://evil.example/", "0; url=/leaving?to=https%3A%2F%2Fevil.example%2F"),
                ("Refresh: 0;URL='//evil.example/'", "0;URL='/leaving?to=https%3A%2F%2Fevil.example%2F'"),
                ("Refresh: 1; url=javascript:alert(1)", nil),
            ] {
                let reply = try await gateway.get(Self.respond([hostile]), cookies: cookies)
                #expect(reply.status == 200 && reply.headers.first(name: "Refresh") == kept, "\(hostile)")
            }
            let inside = try await gateway.get(Self.respond(["Refresh: 5; url=\(upstream.origin)/echo/next"]), cookies: cookies)
            #expect(inside.headers.first(name: "Refresh") == "5; url=/apps/echo/echo/next")

            let links = try await gateway.get(
                Self.respond(["Link: <https://evil.example/x.js>; rel=preload; as=script, </app.css>; rel=preload; as=style"]), cookies: cookies)
            #expect(links.headers["Link"] == ["</apps/echo/app.css>; rel=preload; as=style"])
            let onlyEvil = try await gateway.get(Self.respond(["Link: <//evil.example/x>; rel=preconnect"]), cookies: cookies)
            #expect(onlyEvil.headers["Link"].isEmpty)

            let cookie2 = try await gateway.get(Self.respond(["Set-Cookie2: a=1; Version=1", "Set-Cookie: b=2; Path=/"]), cookies: cookies)
            #expect(cookie2.headers["Set-Cookie2"].isEmpty && cookie2.setCookies.isEmpty)

            let meta = try await gateway.get(
                Self.respond(
                    [],
                    body: "<html><head><meta http-equiv=\"refresh\" content=\"0; url=https://evil.example/\">"
                        + "<meta http-equiv=\"set-cookie\" content=\"c=3\"></head><body>x</body></html>"), cookies: cookies, headers: Self.document)
            // The URL shim first in the head (the echo app is not told its mount), then the app's head, mapped.
            let head = try #require(meta.body.firstMatch(of: /^<html><head>(<script src="[^"]+gatehouse-shim[^"]*"[^>]*><\/script>)(.*?)<body>/))
            #expect(head.2 == #"<meta http-equiv="refresh" content="0; url=/leaving?to=https%3A%2F%2Fevil.example%2F"></head>"#, "\(head.2)")
        }
    }

    @Test func partialAndUTF16DocumentsPassThroughUntouched() async throws {
        try await ProxyTests.withProxy { gateway, _ in
            let cookies = try await ProxyTests.signedIn(gateway)
            let partial = try await gateway.get(
                Self.respond(["Content-Range: bytes 0-26/100"], status: 206), cookies: cookies, headers: Self.document)
            #expect(partial.status == 206 && partial.body == "<html><body>x</body></html>")
            let utf16 = try await gateway.get("/apps/echo/utf16", cookies: cookies, headers: Self.document)
            #expect(utf16.status == 200 && !utf16.body.contains("gatehouse-bar"))
            #expect(
                Array(utf16.body.utf8.prefix(3)) == [0xEF, 0xBF, 0xBD] || utf16.body.utf16.first == 0xFEFF
                    || utf16.body.unicodeScalars.first == "\u{FFFD}")
            let declared = try await gateway.get(
                FormEncoding.url("/apps/echo/respond", adding: [("type", "text/html; charset=UTF-16LE")]), cookies: cookies, headers: Self.document)
            #expect(declared.body == "<html><body>x</body></html>")
        }
    }

    @Test func decompressionBombsGetTheErrorPage() async throws {
        try await ProxyTests.withProxy { gateway, _ in
            let cookies = try await ProxyTests.signedIn(gateway)
            let bomb = try await gateway.get(
                "/apps/echo/bomb", cookies: cookies, headers: Self.document + [("Accept-Encoding", "gzip")], limit: 64 << 20)
            #expect(bomb.status == 502 && bomb.body.contains("far larger once unpacked"))
            // A body that does not inflate is the app's invalid answer, not an unreachable app.
            let corrupt = try await gateway.get("/apps/echo/corrupt-gzip", cookies: cookies, headers: Self.document)
            #expect(corrupt.status == 502 && corrupt.body.contains("does not unpack"))
            let samples = MetricsTests.samples(gateway.built.metrics.exposition())
            #expect(samples[#"gatehouse_upstream_failures_total{app="echo",kind="invalid"}"#] == 2)
            #expect(samples[#"gatehouse_upstream_failures_total{app="echo",kind="connect"}"#] == nil)
            // The ordinary gzip page still works.
            #expect(try await gateway.get("/apps/echo/gzip", cookies: cookies, headers: Self.document).status == 200)
        }
    }

    /// The name is resolved once, by the check, and the connection goes to that address: `rebind.test` resolves
    /// nowhere on this machine, so a second look-up when connecting would fail. The same for WebSocket relays.
    @Test func theConnectionGoesToTheCheckedAddress() async throws {
        struct Pinned: HostResolver {
            func addresses(of host: String) async throws -> [ResolvedAddress] {
                guard host == "rebind.test" else { throw ProxyError.upstreamUnreachable(host) }
                return [ResolvedAddress("127.0.0.1", .loopback)]
            }
        }
        try await EchoUpstream.run { upstream in
            try await LiveGateway.run(
                configure: {
                    $0.allowlist.append("rebind.test")
                    $0.apps = [AppConfiguration(slug: "echo", name: "Echo", upstream: URL(string: "http://rebind.test:\(upstream.port)/")!)]
                }, hostResolver: Pinned()
            ) { gateway in
                let cookies = try await ProxyTests.signedIn(gateway)
                let reply = try await gateway.get("/apps/echo/echo/x", cookies: cookies)
                #expect(reply.status == 200)
                #expect(try ProxyTests.report(reply).headers["host"] == ["rebind.test:\(upstream.port)"])
                let messages = try await ProxyTests.webSocket(gateway, cookies: cookies, send: ["hello"])
                #expect(messages == ["user=\(DevelopmentAccounts.all[0].sub) cookie= host=rebind.test:\(upstream.port)", "echo: hello"])
            }
        }
    }
}
