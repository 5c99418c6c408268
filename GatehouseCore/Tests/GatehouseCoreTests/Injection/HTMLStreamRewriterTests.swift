import Foundation
import Testing

@testable import GatehouseCore

@Suite struct HTMLStreamRewriterTests {
    static let banner = "<!--B-->"

    /// Feeds `html` in chunks of every size from 1 to 7 and checks each gives the same, expected result.
    func rewrite(_ html: String, urls: URLRewriter? = nil, injection: String? = banner) -> String {
        var outputs: Set<String> = []
        for size in 1...7 {
            var rewriter = HTMLStreamRewriter(injection: injection.map { Array($0.utf8) }, urls: urls)
            var output: [UInt8] = []
            let bytes = Array(html.utf8)
            var index = 0
            while index < bytes.count {
                output += rewriter.feed(bytes[index..<min(index + size, bytes.count)])
                index += size
            }
            output += rewriter.finish()
            outputs.insert(String(decoding: output, as: UTF8.self))
        }
        #expect(outputs.count == 1, "chunking changed the result: \(outputs)")
        return outputs.first!
    }

    @Test(arguments: [
        ("<html><body><p>x</p></body></html>", "<html><body><!--B--><p>x</p></body></html>"),
        ("<HTML><BODY class=\"a\">x", "<HTML><BODY class=\"a\"><!--B-->x"),
        ("<BoDy\nonload=\"go()\"\n>x", "<BoDy\nonload=\"go()\"\n><!--B-->x"),
        ("<body data-x=\"a>b\" data-y='<body>'>x", "<body data-x=\"a>b\" data-y='<body>'><!--B-->x"),
        ("<!-- <body> --><body>x", "<!-- <body> --><body><!--B-->x"),
        ("<!----><body>", "<!----><body><!--B-->"),
        ("<!-- a -- b --><body>", "<!-- a -- b --><body><!--B-->"),
        ("<script>document.write('<body>')</script><body>", "<script>document.write('<body>')</script><body><!--B-->"),
        ("<SCRIPT type=x>if (a<b) '</scrip'</SCRIPT ><body>", "<SCRIPT type=x>if (a<b) '</scrip'</SCRIPT ><body><!--B-->"),
        ("<style>body{}</style><body>", "<style>body{}</style><body><!--B-->"),
        ("<template><body>t</body></template><body>", "<template><body>t</body></template><body><!--B-->"),
        ("<textarea><body></textarea><body>", "<textarea><body></textarea><body><!--B-->"),
        ("<title><body></title><body>", "<title><body></title><body><!--B-->"),
        ("<!DOCTYPE html><body>", "<!DOCTYPE html><body><!--B-->"),
        ("<?xml version=\"1.0\"?><body>", "<?xml version=\"1.0\"?><body><!--B-->"),
        ("<bodyx><body>", "<bodyx><body><!--B-->"),
        ("</body><body>", "</body><body><!--B-->"),
        ("a < b <body>", "a < b <body><!--B-->"),
        ("a <<body>", "a <<body><!--B-->"),
        ("<body><body>", "<body><!--B--><body>"),  // once only
        ("<p>no body at all</p>", "<p>no body at all</p><!--B-->"),
        ("<html><head><title>t</title>", "<html><head><title>t</title><!--B-->"),
        ("", "<!--B-->"),
        ("<div title='unterminated", "<div title='unterminated<!--B-->"),
    ])
    func injectsRightAfterTheOpeningBodyTag(html: String, expected: String) {
        #expect(rewrite(html) == expected)
    }

    @Test func multiByteTextSurvivesAnyChunking() {
        let html = "<p>Grüße — 日本語 🙂</p><body>ü"
        #expect(rewrite(html) == "<p>Grüße — 日本語 🙂</p><body><!--B-->ü")
    }

    @Test func oversizedTagsPassThroughUnchanged() {
        let long = "<div data-x=\"" + String(repeating: "a", count: HTMLStreamRewriter.maximumTagBytes + 10) + ">\"><body>"
        #expect(rewrite(long) == long + Self.banner)
    }

    static let urls: URLRewriter = {
        let wiki = URLRewriter.Mount(prefix: "/apps/wiki", upstream: URL(string: "https://wiki.example.org/")!)
        let chat = URLRewriter.Mount(prefix: "/apps/chat", upstream: URL(string: "https://chat.example.org/base")!)
        return URLRewriter(current: wiki, all: [wiki, chat])
    }()

    @Test(arguments: [
        ("<a href=\"/page?x=1#f\">", "<a href=\"/apps/wiki/page?x=1#f\">"),
        ("<a HREF='/'>", "<a HREF='/apps/wiki/'>"),
        ("<a href=/x>", "<a href=/apps/wiki/x>"),
        ("<img src = \"/i.png\" alt=\"/not-a-url\">", "<img src = \"/apps/wiki/i.png\" alt=\"/not-a-url\">"),
        ("<form action=\"/save\"><button formaction=\"/other\">", "<form action=\"/apps/wiki/save\"><button formaction=\"/apps/wiki/other\">"),
        ("<video poster=\"/p.jpg\">", "<video poster=\"/apps/wiki/p.jpg\">"),
        ("<img srcset=\"/a.png 1x, /b.png 2x\">", "<img srcset=\"/apps/wiki/a.png 1x, /apps/wiki/b.png 2x\">"),
        ("<a href=\"https://wiki.example.org/x\">", "<a href=\"/apps/wiki/x\">"),
        ("<a href=\"https://WIKI.example.org:443/x\">", "<a href=\"/apps/wiki/x\">"),
        ("<a href=\"//wiki.example.org/x\">", "<a href=\"/apps/wiki/x\">"),
        ("<a href=\"https://chat.example.org/base/room\">", "<a href=\"/apps/chat/room\">"),
        ("<a href=\"https://chat.example.org/elsewhere\">", "<a href=\"https://chat.example.org/elsewhere\">"),
        ("<a href=\"https://evil.example/x\">", "<a href=\"https://evil.example/x\">"),
        ("<a href=\"relative/x\">", "<a href=\"relative/x\">"),
        ("<a href=\"#top\">", "<a href=\"#top\">"),
        ("<a href=\"javascript:alert(1)\">", "<a href=\"javascript:alert(1)\">"),
        ("<a data-href=\"/x\" title=\"/x\">", "<a data-href=\"/x\" title=\"/x\">"),
        ("<a href>", "<a href>"),
        ("<script src=\"/app.js\"></script>", "<script src=\"/apps/wiki/app.js\"></script>"),
        ("<script>var u = \"<a href='/x'>\"</script>", "<script>var u = \"<a href='/x'>\"</script>"),
        ("<!-- <a href=\"/x\"> -->", "<!-- <a href=\"/x\"> -->"),
    ])
    func rewritesURLAttributesOfPathMountedApps(html: String, expected: String) {
        #expect(rewrite(html, urls: Self.urls, injection: nil) == expected)
    }

    @Test func refreshHeaders() {
        #expect(Self.urls.rewriteRefresh("5; url=/next") == "5; url=/apps/wiki/next")
        #expect(Self.urls.rewriteRefresh("0;URL='https://wiki.example.org/a'") == "0;URL='/apps/wiki/a'")
        #expect(Self.urls.rewriteRefresh("3") == "3")
        // A backslash path stays a path of the gateway (never `//evil.example`).
        #expect(Self.urls.rewriteRefresh("0; url=/\\evil.example/")?.hasPrefix("0; url=/apps/wiki/") == true)
    }

    @Test(arguments: [
        "0; url=https://evil.example/", "0;URL='https://evil.example/'", "0; url = \"//evil.example/x\"", "0,https://evil.example/",
        "0; url=javascript:alert(1)", "0; url=java\tscript:alert(1)", "0; url=\\\\evil.example/",
        "0; url=https://wiki.example.org.evil.example/", "0; url=https://chat.example.org/outside-the-base", "0; url=data:text/html,x",
        "https://evil.example/",
    ])
    func refreshesLeavingTheGatewayAreDropped(value: String) {
        #expect(Self.urls.rewriteRefresh(value) == nil, "\(value)")
    }

    @Test func linkHeadersKeepOnlyEntriesInsideTheGateway() {
        #expect(
            Self.urls.rewriteLink("<https://evil.example/x.js>; rel=preload; as=script, </app.css>; rel=preload; as=style")
                == "</apps/wiki/app.css>; rel=preload; as=style")
        #expect(Self.urls.rewriteLink("<https://chat.example.org/base/a>; rel=\"next, prev\"") == "</apps/chat/a>; rel=\"next, prev\"")
        #expect(Self.urls.rewriteLink("<rel.css>; rel=stylesheet") == "<rel.css>; rel=stylesheet")
        #expect(Self.urls.rewriteLink("<//evil.example/x>; rel=preconnect") == nil)
        #expect(Self.urls.rewriteLink("<javascript:alert(1)>; rel=preload") == nil)
    }

    @Test(arguments: [
        // Meta refreshes out of the gateway and meta cookies are dropped; refreshes inside are mapped.
        ("<meta http-equiv=\"refresh\" content=\"0; url=https://evil.example/\">x", "x"),
        ("<META HTTP-EQUIV=Refresh CONTENT='0;URL=//evil.example/'>x", "x"),
        ("<meta content=\"0; url=https://evil.example/\" http-equiv=\"refresh\">x", "x"),
        ("<meta http-equiv=\"refresh\" content=\"0; url=https&#58;//evil.example/\">x", "x"),
        ("<meta http-equiv=\"refresh\" content=\"0; url=https&colon;&sol;&sol;evil.example/\">x", "x"),
        ("<meta http-equiv=\" refresh \" content=\"0; url=&#x6a;avascript:alert(1)\">x", "x"),
        ("<meta http-equiv=\"set-cookie\" content=\"a=1; path=/\">x", "x"),
        ("<meta http-equiv=\"Set-Cookie\" content=\"a=1\"/>x", "x"),
        (
            "<meta http-equiv=\"refresh\" content=\"5; url=/next?a=1&amp;b=2\">",
            "<meta http-equiv=\"refresh\" content=\"5; url=/apps/wiki/next?a=1&amp;b=2\">"
        ),
        ("<meta http-equiv=\"refresh\" content=\"5\">", "<meta http-equiv=\"refresh\" content=\"5\">"),
        ("<meta charset=\"utf-8\">", "<meta charset=\"utf-8\">"),
        (
            "<script>\"<meta http-equiv=refresh content='0;url=https://evil.example/'>\"</script>",
            "<script>\"<meta http-equiv=refresh content='0;url=https://evil.example/'>\"</script>"
        ),
    ])
    func metaRefreshesAndCookiesAreNeutralised(html: String, expected: String) {
        #expect(rewrite(html, urls: Self.urls, injection: nil) == expected)
    }

    /// A page's manifest of its own origin is fetched with the member's cookies (browsers send none otherwise); one
    /// that says how already, or leads elsewhere, is left alone. Whatever the app's rewriting.
    @Test(arguments: [
        (#"<link rel="manifest" href="manifest.json">"#, #"<link rel="manifest" href="manifest.json" crossorigin="use-credentials">"#),
        (#"<LINK REL="Manifest" HREF="/app.webmanifest"/>"#, #"<LINK REL="Manifest" HREF="/app.webmanifest" crossorigin="use-credentials"/>"#),
        (#"<link href=./m.json rel='icon manifest'>"#, #"<link href=./m.json rel='icon manifest' crossorigin="use-credentials">"#),
        (#"<link rel="manifest" href="m.json" crossorigin>"#, #"<link rel="manifest" href="m.json" crossorigin>"#),
        (#"<link rel="manifest" href="m.json" CrossOrigin="anonymous">"#, #"<link rel="manifest" href="m.json" CrossOrigin="anonymous">"#),
        (#"<link rel="manifest" href="https://cdn.example.net/m.json">"#, #"<link rel="manifest" href="https://cdn.example.net/m.json">"#),
        (#"<link rel="manifest" href="//cdn.example.net/m.json">"#, #"<link rel="manifest" href="//cdn.example.net/m.json">"#),
        (#"<link rel="manifest" href="/\cdn.example.net/m.json">"#, #"<link rel="manifest" href="/\cdn.example.net/m.json">"#),
        (#"<link rel="stylesheet" href="s.css">"#, #"<link rel="stylesheet" href="s.css">"#),
        (#"<link rel="manifest">"#, #"<link rel="manifest">"#),
    ])
    func aManifestOfTheAppsOwnIsFetchedWithTheSession(html: String, expected: String) {
        #expect(rewrite("<head>\(html)</head>", injection: nil) == "<head>\(expected)</head>")
        let urls = URLRewriter(current: .init(prefix: "/apps/wiki", upstream: URL(string: "https://wiki.example.org/")!), all: [])
        let mapped = rewrite("<head>\(html)</head>", urls: urls, injection: nil)
        // On a path mount, a URL the app meant as its own is mapped into the mount first: then it is the gateway's.
        let mappedIntoMount = mapped.contains(#"href="/apps/wiki/"#)
        #expect(mapped.contains("use-credentials") == (expected.contains("use-credentials") || mappedIntoMount), "\(mapped)")
    }
}

/// The scanner copies runs of bytes in one go; on generated pages, cut into chunks anywhere, it must give exactly
/// what the byte-at-a-time state machine (the rewriter before the runs) gives.
@Suite struct HTMLStreamRewriterFuzzTests {
    static let pieces = [
        "<body>", "<BODY class=\"x\">", "<body data-a='>'>", "text ", "a < b ", "<<", "<p class=\"row\" data-i=\"1\">", "</p>",
        "<a href=\"/base/x\">", "<a HREF='https://wiki.example.org/base/y?q=1#f'>", "<a href=/base/z>",
        "<img src=\"//wiki.example.org/base/i.png\" srcset=\"/base/a 1x, /base/b 2x\">",
        "<form action=\"https://evil.example/\">", "<video POSTER='/base/p.jpg'>", "<button formAction=/base/f>", "<x srC=\"/base/s\">", "<!-- c -->",
        "<!-- -- > -->", "<!---->", "<!doctype html>", "<?xml?>",
        "<script>if (a<b) document.write('<body>')</script>", "<script>'</scr'+'ipt>'</SCRIPT >", "<style>p>a{}</style>",
        "<textarea><a href=/base/t></textarea>", "<meta http-equiv=\"refresh\" content=\"0; url=https://evil.example/\">",
        "<meta http-equiv=\"Set-Cookie\" content=\"a=b\">", "<meta http-equiv=refresh content=\"5; url=/base/next\">", "<br/>", "<a href=\"",
        "\">", "'", "\"", ">", "-", "--", "é", "\n", "<x y=\"a\nb\">", "</", "<!", "<!-", "<title><body></title>",
    ]

    static func page(_ generator: inout some RandomNumberGenerator) -> String {
        (0..<Int.random(in: 1...60, using: &generator)).map { _ in pieces.randomElement(using: &generator)! }.joined()
    }

    /// The rewriter before the runs: every byte through the state machine.
    static func byteAtATime(_ html: [UInt8], urls: URLRewriter?) -> [UInt8] {
        var rewriter = HTMLStreamRewriter(injection: Array("<!--B-->".utf8), urls: urls)
        var output: [UInt8] = []
        for byte in html { rewriter.consume(byte, into: &output) }
        return output + rewriter.finish()
    }

    @Test func runsGiveWhatTheByteAtATimeMachineGives() throws {
        let upstream = try #require(URL(string: "https://wiki.example.org/base/"))
        let urls = URLRewriter(current: .init(prefix: "/apps/wiki", upstream: upstream), all: [])
        var generator = SeededGenerator(seed: 0x6761_7465)
        for _ in 0..<3_000 {
            let html = Array(Self.page(&generator).utf8)
            let expected = Self.byteAtATime(html, urls: urls)
            var rewriter = HTMLStreamRewriter(injection: Array("<!--B-->".utf8), urls: urls)
            var output: [UInt8] = []
            var index = 0
            while index < html.count {
                let end = min(html.count, index + Int.random(in: 1...64, using: &generator))
                output += rewriter.feed(html[index..<end])
                index = end
            }
            output += rewriter.finish()
            #expect(output == expected, "\(String(decoding: html, as: UTF8.self))")
            if output != expected { return }
        }
    }

}

/// A deterministic generator (SplitMix64), so a failing page can be found again.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// The head's injection (the URL shim) goes before any script of the app's, however the document begins.
@Suite struct HeadInjectionTests {
    static let cases: [(String, String)] = [
        (
            "<!doctype html><html><head><script>a()</script></head><body>x</body></html>",
            "<!doctype html><html><head>[H]<script>a()</script></head><body>[B]x</body></html>"
        ),
        ("<HTML lang=en><HEAD data-x=\"<head>\"><title>t</title>", "<HTML lang=en><HEAD data-x=\"<head>\">[H]<title>t</title>[B]"),
        ("<html><script src=/a.js></script><body>", "<html>[H]<script src=/a.js></script><body>[B]"),
        ("<!-- <head> --><script>a()</script>", "<!-- <head> -->[H]<script>a()</script>[B]"),
        ("<body>only a body", "[H]<body>[B]only a body"),
        ("plain text", "plain text[H][B]"),
        (
            "<?xml version=\"1.0\"?><html xmlns=\"http://www.w3.org/1999/xhtml\"><head/><body/>",
            "<?xml version=\"1.0\"?><html xmlns=\"http://www.w3.org/1999/xhtml\"><head/>[H]<body/>[B]"
        ),
    ]

    @Test func theHeadsInjectionComesFirst() {
        for (input, expected) in Self.cases {
            let bytes = Array(input.utf8)
            for cut in 0...bytes.count {
                var rewriter = HTMLStreamRewriter(injection: Array("[B]".utf8), urls: nil, headInjection: Array("[H]".utf8))
                let output = rewriter.feed(bytes[..<cut]) + rewriter.feed(bytes[cut...]) + rewriter.finish()
                #expect(String(decoding: output, as: UTF8.self) == expected, "\(input) cut at \(cut)")
            }
        }
    }
}
