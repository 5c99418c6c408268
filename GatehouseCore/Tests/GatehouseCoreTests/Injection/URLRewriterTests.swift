import Foundation
import Testing

@testable import GatehouseCore

/// The rewriter reads a page's ordinary links without Foundation; wherever it does, it must read them exactly as
/// Foundation does, and leave everything unusual to Foundation.
@Suite struct URLRewriterTests {
    static let pieces = [
        "", "/", "/base", "/base/", "/base/x", "/other/", "?", "?a=1&b=2", "#", "#top", "#a#b", "/a b", "/%41", "/%zz", "/%4",
        "/a\\b", "/[x]", "/a|b", "/é", "/a\"b", "/~user", "/a;b=c", "/a@b", "/a:b", "/.", "/..", "/a/../b", "'", "<", "^", "`", "{",
    ]
    static let authorities = [
        "wiki.example.org", "WIKI.Example.ORG", "wiki.example.org:443", "wiki.example.org:8443", "wiki.example.org:", "wiki.example.org:99999",
        "user@wiki.example.org", "[::1]", "wiki%2eexample.org", "wiki.example.org.", "xn--wk-nla.example", "", "wiki_1.example.org",
    ]

    /// Deterministic pseudo-random URLs from the pieces above (a fixed seed, so a failure can be replayed).
    static func generated(count: Int) -> [String] {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(bound))
        }
        return (0..<count).map { _ in
            let scheme = ["https://", "http://", "HTTPS://", "Http://"][next(4)]
            let path = (0..<next(4)).map { _ in pieces[next(pieces.count)] }.joined()
            return scheme + authorities[next(authorities.count)] + path
        }
    }

    @Test func theFastReadingAgreesWithFoundationWheneverItReadsAtAll() {
        var read = 0
        for url in Self.generated(count: 20_000) {
            guard let fast = URLRewriter.plainOriginAndPath(url) else { continue }
            read += 1
            let foundation = URLRewriter.parsedOriginAndPath(url)
            #expect(foundation?.origin == fast.origin && foundation?.path == fast.path, "\(url): \(fast) vs \(String(describing: foundation))")
        }
        // It does read most ordinary links.
        #expect(read > 2_000)
    }

    @Test func relativeAndAbsoluteLinksMapTheSameWayAsBefore() throws {
        let upstream = try #require(URL(string: "https://wiki.example.org/base/"))
        let other = try #require(URL(string: "https://wiki.example.org/other/"))
        let urls = URLRewriter(
            current: .init(prefix: "/apps/wiki", upstream: upstream),
            all: [.init(prefix: "/apps/wiki", upstream: upstream), .init(prefix: "/apps/other", upstream: other)])
        for piece in Self.pieces {
            let rootRelative = piece.hasPrefix("/") ? piece : "/" + piece
            // Root-relative: as if it were written with the current app's origin.
            #expect(urls.rewrite(rootRelative) == urls.rewriteAbsolute("https://wiki.example.org" + rootRelative), "\(rootRelative)")
        }
        #expect(urls.rewrite("/base/x?y#z") == "/apps/wiki/x?y#z")
        #expect(urls.rewrite("/other/x") == "/apps/other/x")
        #expect(urls.rewrite("HTTPS://WIKI.example.org:443/base/a") == "/apps/wiki/a")
        #expect(urls.rewrite("https://wiki.example.org:8443/base/a") == nil)
        #expect(urls.rewrite("/elsewhere") == nil)
        #expect(urls.rewrite("relative/x") == nil)
        #expect(urls.rewrite("//wiki.example.org/base/q") == "/apps/wiki/q")
    }
}
