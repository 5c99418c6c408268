import Testing

@testable import GatehouseCore

/// Messages as markup: other clients' `formatted_body` through the allowlist, with the html5lib and DOMPurify
/// vectors that break sanitizers (scripts, event handlers, `javascript:` and `data:` URLs, entity-encoded schemes,
/// nested forms, SVG and MathML, comments and CDATA, unclosed tags); the Markdown members write; plain bodies' links.
@Suite struct MessageMarkupTests {
    /// What no sanitized output may hold, whatever the input.
    static func isInert(_ html: String) -> Bool {
        let lower = html.lowercased()
        let tags = lower.matches(of: /<\/?([a-z0-9-]+)/).map { String($0.1) }
        let allowed = MessageMarkup.kept.union(["a"])
        return tags.allSatisfy(allowed.contains) && !lower.contains("javascript:") && !lower.contains("data:") && !lower.contains(" on")
            && !lower.contains("style=") && !lower.contains("src=")
    }

    static let hostile: [String] = [
        "<script>alert(1)</script>",
        "<img src=x onerror=alert(1)>",
        "<svg><script>alert(1)</script></svg>",
        "<svg onload=alert(1)>",
        "<math><mi xlink:href=\"javascript:alert(1)\">x</mi></math>",
        "<a href=\"javascript:alert(1)\">x</a>",
        "<a href=\"JaVaScRiPt:alert(1)\">x</a>",
        "<a href=\"&#106;avascript:alert(1)\">x</a>",
        "<a href=\"&#x6A;avascript&colon;alert(1)\">x</a>",
        "<a href=\"java\tscript:alert(1)\">x</a>",
        "<a href=\" javascript:alert(1)\">x</a>",
        "<a href=\"data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==\">x</a>",
        "<a href=\"vbscript:msgbox(1)\">x</a>",
        "<a href='//evil.test'>relative</a>",
        "<form><form action=javascript:alert(1)><button>go</button></form></form>",
        "<iframe src=\"javascript:alert(1)\"></iframe>",
        "<object data=\"javascript:alert(1)\"></object>",
        "<embed src=x>",
        "<div style=\"background:url(javascript:alert(1))\">x</div>",
        "<b onclick=alert(1)>bold</b>",
        "<p/onmouseover=alert(1)>x",
        "<<script>script>alert(1)<</script>/script>",
        "<scr<script>ipt>alert(1)</scr</script>ipt>",
        "<!--<script>alert(1)</script>-->",
        "<![CDATA[<script>alert(1)</script>]]>",
        "<noscript><p title=\"</noscript><img src=x onerror=alert(1)>\">",
        "<style><img src=x onerror=alert(1)></style>",
        "<textarea><img src=x onerror=alert(1)></textarea>",
        "<template><script>alert(1)</script></template>",
        "<svg><foreignObject><img src=x onerror=alert(1)></foreignObject></svg>",
        "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>",
        "<a href=\"https://ok.test\" onclick=\"alert(1)\">ok</a>",
        "<a href=\"https://ok.test\"><a href=\"javascript:alert(1)\">nested</a></a>",
        "<input autofocus onfocus=alert(1)>",
        "<details open ontoggle=alert(1)>",
        "<body onload=alert(1)>",
        "<meta http-equiv=refresh content=\"0;url=javascript:alert(1)\">",
        "<link rel=stylesheet href=javascript:alert(1)>",
        "<base href=javascript:alert(1)//>",
        "<img src=\"x\" alt=\"\"onerror=\"alert(1)\">",
        "<a href=\"https://ok.test/\" title=\"\" onmouseover=\"alert(1)\">t</a>",
        "<b>unclosed <i>tags",
        "</b></i></p>closing first",
        "<b " + String(repeating: "a", count: 10_000),
        String(repeating: "<b>", count: 10_000) + "deep",
        "<mx-reply><blockquote><a href=\"https://matrix.to/#/!r/$e\">In reply to</a> quoted</blockquote></mx-reply>the reply",
    ]

    @Test(arguments: hostile)
    func hostileMarkupIsInert(_ input: String) {
        let output = MessageMarkup.sanitized(input)
        #expect(Self.isInert(output), "\(input.prefix(80)) → \(output.prefix(200))")
        // Whatever went in, the tags that come out are balanced.
        var open: [String] = []
        for match in output.matches(of: /<(\/?)([a-z0-9]+)[^>]*>/) where !MessageMarkup.void.contains(String(match.2)) {
            if match.1.isEmpty { open.append(String(match.2)) } else { #expect(open.popLast() == String(match.2), "\(output.prefix(200))") }
        }
        #expect(open.isEmpty)
    }

    @Test func formattingAndLinksOfOtherClientsAreKept() {
        #expect(MessageMarkup.sanitized("<b>bold</b> and <em>it</em>") == "<b>bold</b> and <em>it</em>")
        #expect(MessageMarkup.sanitized("<a href=\"https://ok.test/a?b=1&amp;c=2\" title=x>ok</a>")
            == #"<a href="https://ok.test/a?b=1&amp;c=2" rel="noopener noreferrer nofollow" target="_blank">ok</a>"#)
        #expect(MessageMarkup.sanitized("<a href=\"mailto:bob@ok.test\">mail</a>").contains(#"href="mailto:bob@ok.test""#))
        // A link that may not be followed keeps its text.
        #expect(MessageMarkup.sanitized("<a href=\"javascript:alert(1)\">click</a>") == "click")
        // The reply's fallback goes (the page shows the reply's own context), the reply stays.
        #expect(MessageMarkup.sanitized("<mx-reply><blockquote>old</blockquote></mx-reply>new") == "new")
        #expect(MessageMarkup.sanitized("<ul><li>one<li>two</ul>") == "<ul><li>one<li>two</li></li></ul>")
        #expect(MessageMarkup.sanitized("<pre><code>let x = 1 &lt; 2</code></pre>") == "<pre><code>let x = 1 &lt; 2</code></pre>")
        #expect(MessageMarkup.sanitized("x < y & z > w") == "x &lt; y &amp; z &gt; w")
        #expect(MessageMarkup.sanitized("<script>gone</script>kept<style>gone</style>") == "kept")
        #expect(MessageMarkup.sanitized("<div><span>text</span></div>") == "text")
        #expect(MessageMarkup.sanitized("&#0;&#xD800;&unknown;") == "\u{FFFD}\u{FFFD}&amp;unknown;")
    }

    @Test(arguments: [
        ("**bold** and *it* and _it_ and ~~gone~~", "<strong>bold</strong> and <em>it</em> and <em>it</em> and <del>gone</del>"),
        ("`**not bold**` then **bold**", "<code>**not bold**</code> then <strong>bold</strong>"),
        ("a snake_case_name stays", nil),
        ("2 * 3 * 4", nil),
        ("- one\n- two", "<ul><li>one</li><li>two</li></ul>"),
        ("1. first\n2. second", "<ol><li>first</li><li>second</li></ol>"),
        ("> quoted\n> more\n\nafter", "<blockquote>quoted<br>more</blockquote><p>after</p>"),
        ("```\n<b>code</b>\n```", "<pre><code>&lt;b&gt;code&lt;/b&gt;</code></pre>"),
        ("<script>alert(1)</script> **x**", "&lt;script&gt;alert(1)&lt;/script&gt; <strong>x</strong>"),
        ("see https://ok.test/a_b_c", nil),
        ("**see** https://ok.test/a_b_c", #"<strong>see</strong> <a href="https://ok.test/a_b_c" rel="noopener noreferrer nofollow" target="_blank">https://ok.test/a_b_c</a>"#),
        ("plain text\non two lines", nil),
        ("an unclosed `tick", nil),
    ] as [(String, String?)])
    func markdownMembersWrite(_ text: String, _ html: String?) {
        #expect(MessageMarkup.formatted(text) == html, "\(text)")
        if let made = MessageMarkup.formatted(text) { #expect(Self.isInert(made)) }
    }

    @Test func plainBodiesLinks() {
        #expect(MessageMarkup.plain("go to https://ok.test/x?a=1&b=2.") == #"go to <a href="https://ok.test/x?a=1&amp;b=2" rel="noopener noreferrer nofollow" target="_blank">https://ok.test/x?a=1&amp;b=2</a>."#)
        #expect(MessageMarkup.plain("javascript:alert(1) and <b>") == "javascript:alert(1) and &lt;b&gt;")
        #expect(MessageMarkup.plain("(https://ok.test)") == #"(<a href="https://ok.test" rel="noopener noreferrer nofollow" target="_blank">https://ok.test</a>)"#)
        #expect(MessageMarkup.plain("\"https://ok.test/\"onmouseover=alert(1)").contains(#"href="https://ok.test/""#))
        #expect(MessageMarkup.plain("xhttps://ok.test is no link") == "xhttps://ok.test is no link")
        #expect(MessageMarkup.plain("https:// alone") == "https:// alone")
    }
}
