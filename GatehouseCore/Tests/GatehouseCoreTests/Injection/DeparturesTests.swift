import Testing

@testable import GatehouseCore

/// Which links leave the organization's apps, read as a browser reads them: hostile spellings of hosts outside the
/// allowlist go to the leaving page, allowed hosts however spelled stay, relative references and other schemes are
/// not departures.
@Suite struct DeparturesTests {
    static let departures = Departures(allowlist: Allowlist(["apps.example.org", "*.corp.example"]), page: "/leaving")

    @Test(arguments: [
        ("https://evil.example/x?y=1#z", "evil.example"), ("HTTPS://EVIL.EXAMPLE", "EVIL.EXAMPLE"), ("//evil.example/a", "evil.example"),
        ("/\\evil.example", "evil.example"), ("\\\\evil.example", "evil.example"), ("https:evil.example", "evil.example"),
        ("https:///evil.example", "evil.example"), ("https://apps.example.org@evil.example/", "evil.example"),
        ("https://user:pass@evil.example:8443/", "evil.example"), (" \t https://evil.example", "evil.example"),
        ("htt\tps://evil.example", "evil.example"), ("https://ev\nil.example", "evil.example"), ("http://10.0.0.1/", "10.0.0.1"),
        ("https://[::1]:8080/", "[::1]"), ("https://\u{430}pps.example.org/", "\u{430}pps.example.org"),
        ("https://apps.example.org.evil.example/", "apps.example.org.evil.example"), ("https://evilcorp.example/", "evilcorp.example"),
        ("https://corp.example/", "corp.example"), ("https://apps%2Eexample.org/", "apps%2Eexample.org"),
    ])
    func hostsOutsideTheAllowlistGoToTheLeavingPage(link: String, host: String) throws {
        let page = try #require(Self.departures.leavingPage(for: link), "\(link)")
        #expect(page.hasPrefix("/leaving?to="))
        #expect(Departures.destination(link)?.host == host)
        // The destination travels percent-encoded: nothing of it can end the attribute or add a parameter.
        #expect(!page.dropFirst("/leaving?to=".count).contains { "\"'<>& ?#".contains($0) })
    }

    @Test(arguments: [
        "https://apps.example.org/x", "https://APPS.EXAMPLE.ORG./x", "//apps.example.org", "https://evil.example@apps.example.org/",
        "https://apps.example.org:8443/", "https://wiki.corp.example/", "HTTP://Wiki.Corp.Example./a",
        "page.html", "/path", "?q=https://evil.example", "#https://evil.example", "", "javascript:alert(1)", "mailto:a@evil.example",
        "data:text/html,hi", "ftp://evil.example/",
    ])
    func allowedHostsRelativeReferencesAndOtherSchemesAreNoDepartures(link: String) {
        #expect(Self.departures.leavingPage(for: link) == nil, "\(link)")
    }

    @Test func theDestinationIsWhatTheBrowserWouldReach() {
        // User info is dropped: it is how one host is dressed up as another (`https://apps.example.org@evil.example`).
        #expect(Departures.destination("https://u@evil.example:444/a?b#c")?.url == "https://evil.example:444/a?b#c")
        #expect(Departures.destination("//evil.example")?.url == "https://evil.example/")
        #expect(Departures.destination("HTTP:\\\\evil.example\\x")?.url == "http://evil.example/x")
    }

    @Test func namesInOtherAlphabetsAreAlsoShownAsBrowsersSendThem() {
        #expect(Departures.shownHost("Evil.Example") == ("evil.example", nil))
        #expect(Departures.shownHost("bücher.example").ascii == "xn--bcher-kva.example")
        #expect(Departures.shownHost("münchen.de").ascii == "xn--mnchen-3ya.de")
        #expect(Departures.shownHost("\u{430}pps.example.org").ascii?.hasPrefix("xn--pps-") == true)
    }
}
