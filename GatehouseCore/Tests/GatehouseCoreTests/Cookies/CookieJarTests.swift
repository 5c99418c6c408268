import Foundation
import Testing

@testable import GatehouseCore

@Suite struct CookieJarTests {
    static let wiki = CookieOrigin(host: "wiki.example.org", path: "/docs/page", isSecure: true)
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    func jar(_ headers: [String], from origin: CookieOrigin = wiki) -> CookieJar {
        var jar = CookieJar()
        for header in headers { jar.store(setCookie: header, from: origin, now: Self.now) }
        return jar
    }

    @Test(
        arguments: [
            // (Set-Cookie, requested host, path, secure, expected Cookie header)
            ("a=1", "wiki.example.org", "/docs/other", true, "a=1"),
            ("a=1", "wiki.example.org", "/", true, nil),  // default path is /docs
            ("a=1", "other.example.org", "/docs/x", true, nil),  // host-only
            ("a=1; Path=/", "wiki.example.org", "/anything", true, "a=1"),
            ("a=1; Domain=example.org; Path=/", "chat.example.org", "/", true, "a=1"),
            ("a=1; Domain=.example.org; Path=/", "example.org", "/", true, "a=1"),
            ("a=1; Domain=EXAMPLE.ORG.; Path=/", "x.example.org", "/", true, "a=1"),
            ("a=1; Domain=example.org; Path=/", "badexample.org", "/", true, nil),
            ("a=1; Path=/docs", "wiki.example.org", "/docsearch", true, nil),  // path boundary
            ("a=1; Path=/docs", "wiki.example.org", "/docs/", true, "a=1"),
            ("a=1; Path=/docs/", "wiki.example.org", "/docs", true, nil),
            ("a=1; Secure; Path=/", "wiki.example.org", "/", false, nil),
            ("a=1; Path=relative", "wiki.example.org", "/docs/x", true, "a=1"),  // invalid Path → default path
            ("a=; Path=/", "wiki.example.org", "/", true, "a="),
            ("a = 1 ; path=/", "wiki.example.org", "/", true, "a=1"),
        ] as [(String, String, String, Bool, String?)])
    func browserSemantics(setCookie: String, host: String, path: String, secure: Bool, expected: String?) {
        var jar = jar([setCookie])
        #expect(jar.cookieHeader(for: CookieOrigin(host: host, path: path, isSecure: secure), now: Self.now) == expected)
    }

    @Test(arguments: [
        ("a=1; Domain=org", "public suffix"),
        ("a=1; Domain=co.uk", "public suffix"),
        ("a=1; Domain=github.io", "public suffix"),
        ("a=1; Domain=evil.example", "domain"),
        ("a=1; Domain=wiki.example.org.evil.example", "domain"),
        ("a=1; Domain=ki.example.org", "domain"),
        ("novalue", "no name=value"),
        ("=1", "empty name"),
        ("a=b\u{0}c", "control"),
        ("a=1; Max-Age=0", "expired"),
        ("a=1; Expires=Wed, 21 Oct 2015 07:28:00 GMT", "expired"),
    ])
    func refusals(setCookie: String, reason: String) {
        var jar = CookieJar()
        let outcome = jar.store(setCookie: setCookie, from: Self.wiki, now: Self.now)
        guard case .rejected(let text) = outcome else {
            Issue.record("expected a refusal, got \(outcome)")
            return
        }
        #expect(text.contains(reason))
        #expect(jar.cookies.isEmpty)
    }

    @Test func aBareHostMaySetACookieForItselfOnly() {
        var jar = CookieJar()
        let intranet = CookieOrigin(host: "intranet", path: "/", isSecure: true)
        #expect(jar.store(setCookie: "a=1; Domain=intranet", from: intranet, now: Self.now) == .stored)
        #expect(jar.cookies.first?.hostOnly == true)
    }

    @Test func overwriteKeepsCreationTimeAndDeletionRemoves() {
        var jar = jar(["a=1; Path=/"])
        let later = Self.now.addingTimeInterval(60)
        #expect(jar.store(setCookie: "a=2; Path=/", from: Self.wiki, now: later) == .stored)
        #expect(jar.cookies.count == 1 && jar.cookies[0].value == "2" && jar.cookies[0].createdAt == Self.now)
        #expect(jar.store(setCookie: "a=gone; Path=/; Max-Age=-1", from: Self.wiki, now: later) == .deleted)
        #expect(jar.cookies.isEmpty)
    }

    @Test func differentPathsAndDomainsAreDifferentCookies() {
        var jar = jar(["a=root; Path=/", "a=docs; Path=/docs", "a=shared; Domain=example.org; Path=/"])
        #expect(jar.cookies.count == 3)
        // Longest path first.
        #expect(jar.cookieHeader(for: Self.wiki, now: Self.now)?.hasPrefix("a=docs; ") == true)
    }

    @Test func maxAgeWinsOverExpiresAndCookiesExpire() {
        var jar = jar(["a=1; Path=/; Max-Age=60; Expires=Wed, 21 Oct 2015 07:28:00 GMT", "b=2; Path=/; Expires=Wed, 21 Oct 2099 07:28:00 GMT"])
        #expect(jar.cookies.count == 2)
        #expect(jar.cookieHeader(for: Self.wiki, now: Self.now.addingTimeInterval(61)) == "b=2")
    }

    @Test func insecureOriginsCannotOverwriteSecureCookies() {
        var jar = jar(["s=secret; Secure; Path=/"])
        let plain = CookieOrigin(host: "wiki.example.org", path: "/", isSecure: false)
        #expect(jar.store(setCookie: "s=attacker; Path=/", from: plain, now: Self.now) != .stored)
        #expect(jar.cookieHeader(for: Self.wiki, now: Self.now) == "s=secret")
    }

    @Test func ipHostsNeverDomainMatch() {
        var jar = CookieJar()
        let ip = CookieOrigin(host: "10.0.0.1", path: "/", isSecure: true)
        #expect(jar.store(setCookie: "a=1; Domain=0.0.1", from: ip, now: Self.now) != .stored)
        #expect(jar.store(setCookie: "a=1", from: ip, now: Self.now) == .stored)
        #expect(jar.cookieHeader(for: CookieOrigin(host: "1.10.0.0.1", path: "/", isSecure: true), now: Self.now) == nil)
    }

    @Test func sizeAndCountLimits() {
        var jar = CookieJar()
        let big = String(repeating: "x", count: CookieJar.maximumCookieBytes)
        #expect(jar.store(setCookie: "a=\(big)", from: Self.wiki, now: Self.now) == .rejected("too large"))
        for index in 0..<(CookieJar.maximumPerDomain + 10) {
            jar.store(setCookie: "c\(index)=v; Path=/", from: Self.wiki, now: Self.now.addingTimeInterval(TimeInterval(index)))
        }
        #expect(jar.cookies.count == CookieJar.maximumPerDomain)
        #expect(!jar.cookies.contains { $0.name == "c0" })  // least recently used went first
        #expect(jar.cookies.contains { $0.name == "c59" })
    }

    @Test(arguments: [
        ("Wed, 21 Oct 2015 07:28:00 GMT", 1_445_412_480.0),
        ("Wednesday, 21-Oct-15 07:28:00 GMT", 1_445_412_480.0),
        ("Wed Oct 21 07:28:00 2015", 1_445_412_480.0),
        ("21 oct 2015 7:28:0", 1_445_412_480.0),
    ])
    func cookieDates(text: String, seconds: Double) {
        #expect(CookieDate.parse(text)?.timeIntervalSince1970 == seconds)
    }

    @Test(arguments: [
        "", "yesterday", "Wed, 32 Oct 2015 07:28:00 GMT", "Wed, 21 Oct 1500 07:28:00 GMT", "Wed, 21 Oct 2015 25:00:00 GMT", "31 Feb 2020 00:00:00",
    ])
    func invalidCookieDates(text: String) {
        #expect(CookieDate.parse(text) == nil)
    }

    @Test func defaultPaths() {
        #expect(CookieJar.defaultPath("/docs/page") == "/docs")
        #expect(CookieJar.defaultPath("/page") == "/")
        #expect(CookieJar.defaultPath("") == "/")
        #expect(CookieJar.defaultPath("/a/b/") == "/a/b")
    }
}

/// The organization's own public suffixes: apps admitted by the allowlist cannot plant cookies on each other.
@Suite struct CookieDomainPolicyTests {
    static let policy = CookieDomainPolicy(
        allowlist: Allowlist(["*.apps.example.org", "wiki.example.org", "*.example.net"]), boundaries: ["corp.example.net"])
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    @Test(
        arguments: [
            // (setting host, Set-Cookie, host that asks later, expected Cookie header there)
            ("team1.apps.example.org", "a=1; Domain=apps.example.org; Path=/", "team2.apps.example.org", nil),
            ("team1.apps.example.org", "a=1; Domain=.APPS.example.org.; Path=/", "team2.apps.example.org", nil),
            ("team1.apps.example.org", "a=1; Domain=example.org; Path=/", "wiki.example.org", nil),
            ("team1.apps.example.org", "a=1; Domain=org; Path=/", "wiki.example.org", nil),
            ("wiki.example.org", "a=1; Domain=example.org; Path=/", "team1.apps.example.org", nil),
            ("wiki.example.org", "a=1; Domain=example.org; Path=/", "example.org", nil),
            ("x.corp.example.net", "a=1; Domain=corp.example.net; Path=/", "y.corp.example.net", nil),
            ("x.corp.example.net", "a=1; Domain=example.net; Path=/", "y.example.net", nil),
            // Within an entry's reach a domain cookie still works, and host-only cookies always do.
            ("a.team1.apps.example.org", "a=1; Domain=team1.apps.example.org; Path=/", "b.team1.apps.example.org", "a=1"),
            ("team1.apps.example.org", "a=1; Domain=team1.apps.example.org; Path=/", "team1.apps.example.org", "a=1"),
            ("team1.apps.example.org", "a=1; Path=/", "team1.apps.example.org", "a=1"),
            ("wiki.example.org", "a=1; Domain=wiki.example.org; Path=/", "wiki.example.org", "a=1"),
            ("a.example.net", "a=1; Domain=a.example.net; Path=/", "b.a.example.net", "a=1"),
        ] as [(String, String, String, String?)])
    func cookiesStayInsideTheirAllowlistEntry(setter: String, setCookie: String, reader: String, expected: String?) {
        var jar = CookieJar()
        jar.store(setCookie: setCookie, from: CookieOrigin(host: setter, path: "/", isSecure: true), domains: Self.policy, now: Self.now)
        #expect(jar.cookieHeader(for: CookieOrigin(host: reader, path: "/", isSecure: true), now: Self.now) == expected)
    }

    @Test func aBoundaryHostsOwnCookieBecomesHostOnly() {
        // An app at `apps.example.org` itself may keep its own cookie; it never reaches the tenants below.
        var jar = CookieJar()
        let origin = CookieOrigin(host: "apps.example.org", path: "/", isSecure: true)
        #expect(jar.store(setCookie: "a=1; Domain=apps.example.org; Path=/", from: origin, domains: Self.policy, now: Self.now) == .stored)
        #expect(jar.cookieHeader(for: origin, now: Self.now) == "a=1")
        #expect(jar.cookieHeader(for: CookieOrigin(host: "team1.apps.example.org", path: "/", isSecure: true), now: Self.now) == nil)
    }
}
