import Foundation
import GatehouseCore
import Testing

@testable import Gatehouse

/// Links that leave the allowlist: an app page's links, forms, button actions, meta refreshes and `Refresh` headers
/// to hosts outside it go through the leaving page, however the host is spelled; allowed hosts, other apps and
/// images stay as they were. The page names the destination and continues only where leaving is allowed.
@Suite struct LeavingTests {
    static func leaving(_ url: String) -> String { "/leaving?to=" + FormEncoding.escape(url) }

    static let page = """
        <html><head><meta http-equiv="refresh" content="30; url=https://evil.example/refresh"></head><body>
        <a id="a" href="https://evil.example/x?y=1">x</a><a href="//evil.example/proto">p</a>
        <a href="https&#58;//evil.example/ref">r</a><a href="https://127.0.0.1@evil.example/user">u</a>
        <a href="HTTPS://EVIL.EXAMPLE./case">c</a><a href="/\\evil.example/slash">s</a>
        <a href="https://\u{430}pps.example/idn">i</a>
        <form method="post" action="https://evil.example/post"><button formaction="https://evil.example/button">b</button></form>
        <a href="http://localhost./kept">k</a><a href="http://LOCALHOST:1/kept2">k2</a><a href="page.html">rel</a>
        <img src="https://evil.example/image.png"><a href="mailto:someone@evil.example">m</a>
        <link rel="stylesheet" href="https://evil.example/style.css"><area href="https://evil.example/area">
        </body></html>
        """

    @Test func departuresGoThroughTheLeavingPageOnBothPaths() async throws {
        try await ProxyTests.withProxy { gateway, _ in
            let cookies = try await ProxyTests.signedIn(gateway)
            let path = "/apps/echo/html?doc=" + FormEncoding.escape(Self.page)
            // Twice: the application's path first, then the data plane.
            for _ in 0..<2 {
                let body = try await gateway.get(path, cookies: cookies, headers: GatewayBarTests.document).body
                for url in [
                    "https://evil.example/x?y=1", "https://evil.example/proto", "https://evil.example/ref", "https://evil.example/user",
                    "https://EVIL.EXAMPLE./case", "https://\u{430}pps.example/idn", "https://evil.example/post",
                    "https://evil.example/button", "https://evil.example/area",
                ] {
                    #expect(body.contains("\"\(Self.leaving(url))\""), "\(url)")
                }
                #expect(body.contains("content=\"30; url=\(Self.leaving("https://evil.example/refresh"))\""))
                for kept in [
                    "href=\"http://localhost./kept\"", "href=\"http://LOCALHOST:1/kept2\"", "href=\"page.html\"",
                    "src=\"https://evil.example/image.png\"", "href=\"mailto:someone@evil.example\"",
                    "href=\"https://evil.example/style.css\"",
                    // `/\host` is mapped into the app as a path of its own: it never leaves the gateway's host.
                    "href=\"/apps/echo/%5Cevil.example/slash\"",
                ] {
                    #expect(body.contains(kept), "\(kept)")
                }
            }
            // A `Refresh` header leads there too.
            let refreshing = try await gateway.get(
                "/apps/echo/respond?h=" + FormEncoding.escape("Refresh: 0; url=https://evil.example/r"), cookies: cookies)
            #expect(refreshing.headers.first(name: "Refresh") == "0; url=" + Self.leaving("https://evil.example/r"))
        }
    }

    @Test func theLeavingPageNamesTheDestinationAndContinuesOnlyWhereAllowed() async throws {
        try await ProxyTests.withProxy { gateway, _ in
            let cookies = try await ProxyTests.signedIn(gateway)
            let page = try await gateway.get(
                Self.leaving("https://evil.example/x?y=1"), cookies: cookies,
                headers: [("Referer", gateway.origin + "/apps/echo/html?p=1")])
            #expect(page.status == 200 && page.headers.first(name: "Referrer-Policy") == "no-referrer")
            #expect(page.body.contains("This link leads to evil.example, which is not one of the sites Gatehouse lets you reach."))
            #expect(page.body.contains(#"id="leaving-continue" href="https://evil.example/x?y=1" rel="noopener noreferrer""#))
            #expect(page.body.contains(#"id="leaving-back" href="/apps/echo/html?p=1""#))
            // A form sent there goes no further; the page says so.
            let posted = try await gateway.post(Self.leaving("https://evil.example/post"), form: [("secret", "x")], cookies: cookies)
            #expect(posted.status == 200 && posted.body.contains("The form you sent was not passed on"))
            // A name in another alphabet is also shown as browsers send it.
            let idn = try await gateway.get(Self.leaving("https://\u{430}pps.example/"), cookies: cookies)
            #expect(idn.body.contains("xn--pps-") && idn.body.contains("Continue to xn--pps-"))
            // What is not an http(s) destination is refused; markup in one is only text.
            for hostile in ["javascript:alert(1)", "data:text/html,x", "/apps/echo/", ""] {
                #expect(try await gateway.get(Self.leaving(hostile), cookies: cookies).status == 400, "\(hostile)")
            }
            let markup = try await gateway.get(Self.leaving("https://evil.example/\"><script>alert(1)</script>"), cookies: cookies)
            #expect(markup.status == 200 && !markup.body.contains("<script>alert(1)"))
            // An outside referrer is no way back.
            let outside = try await gateway.get(
                Self.leaving("https://evil.example/"), cookies: cookies, headers: [("Referer", "https://evil.example/apps/echo/")])
            #expect(!outside.body.contains("id=\"leaving-back\""))
        }
    }

    @Test func withLeavingBlockedThePageOffersNoWayOut() async throws {
        try await ProxyTests.withProxy(configure: { $0.proxy.leaving = .block }) { gateway, _ in
            let cookies = try await ProxyTests.signedIn(gateway)
            let page = try await gateway.get(Self.leaving("https://evil.example/x"), cookies: cookies)
            #expect(page.status == 200 && page.body.contains("does not allow leaving its apps") && !page.body.contains("leaving-continue"))
        }
    }
}
