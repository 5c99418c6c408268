import Foundation
import Testing

@testable import GatehouseCore

/// Style sheets of a path-mounted app: root-relative and own-origin URLs in `url(…)` and `@import` name the mount;
/// everything else (relative URLs, data URLs, comments, strings, other hosts) stays as written, however the sheet is
/// cut into chunks.
@Suite struct CSSStreamRewriterTests {
    static let urls = URLRewriter(
        current: .init(prefix: "/apps/prom", upstream: URL(string: "http://127.0.0.1:9090/")!),
        all: [.init(prefix: "/apps/prom", upstream: URL(string: "http://127.0.0.1:9090/")!)])

    static let cases: [(String, String)] = [
        ("a{background:url(/img/x.png)}", "a{background:url(/apps/prom/img/x.png)}"),
        ("a{background:URL( \"/img/x.png\" )}", "a{background:URL( \"/apps/prom/img/x.png\" )}"),
        ("a{background:url('/img/x.png')}", "a{background:url('/apps/prom/img/x.png')}"),
        ("@import \"/base.css\";", "@import \"/apps/prom/base.css\";"),
        ("@IMPORT url(/base.css) screen;", "@IMPORT url(/apps/prom/base.css) screen;"),
        ("a{background:url(http://127.0.0.1:9090/i.png)}", "a{background:url(/apps/prom/i.png)}"),
        ("a{background:url(img/x.png)}", "a{background:url(img/x.png)}"),
        ("a{background:url(../x.png)}", "a{background:url(../x.png)}"),
        ("a{background:url(data:image/png;base64,AAAA)}", "a{background:url(data:image/png;base64,AAAA)}"),
        ("a{background:url(https://cdn.example.org/x.png)}", "a{background:url(https://cdn.example.org/x.png)}"),
        ("/* url(/commented) */a{}", "/* url(/commented) */a{}"),
        ("a::after{content:\"url(/in-a-string)\"}", "a::after{content:\"url(/in-a-string)\"}"),
        ("a{background:myurl(/x)}", "a{background:myurl(/x)}"),
        ("a{background:url(/a\\)b)}", "a{background:url(/a\\)b)}"),
        ("a{b:url(//127.0.0.1:9090/x)}", "a{b:url(/apps/prom/x)}"),
        ("", ""),
    ]

    @Test func wholeSheets() {
        for (input, expected) in Self.cases {
            var rewriter = CSSStreamRewriter(urls: Self.urls)
            let output = rewriter.feed(Array(input.utf8)) + rewriter.finish()
            #expect(String(decoding: output, as: UTF8.self) == expected, "\(input)")
        }
    }

    /// Every case cut at every place, in two chunks, and one byte at a time.
    @Test func sheetsCutAnywhere() {
        for (input, expected) in Self.cases {
            let bytes = Array(input.utf8)
            for cut in 0...bytes.count {
                var rewriter = CSSStreamRewriter(urls: Self.urls)
                let output = rewriter.feed(bytes[..<cut]) + rewriter.feed(bytes[cut...]) + rewriter.finish()
                #expect(String(decoding: output, as: UTF8.self) == expected, "\(input) cut at \(cut)")
            }
            var rewriter = CSSStreamRewriter(urls: Self.urls)
            var output: [UInt8] = []
            for byte in bytes { output += rewriter.feed([byte]) }
            output += rewriter.finish()
            #expect(String(decoding: output, as: UTF8.self) == expected, "\(input) byte by byte")
        }
    }

    /// An unterminated comment or string at the end is held only up to its limit, then goes out as it came.
    @Test func anEndlessTokenIsNotHeldForever() {
        var rewriter = CSSStreamRewriter(urls: Self.urls)
        let long = Array(("/*" + String(repeating: "x", count: CSSStreamRewriter.maximumHeldBytes + 10)).utf8)
        let output = rewriter.feed(long)
        #expect(output == long)
        #expect(rewriter.finish().isEmpty)
    }
}
