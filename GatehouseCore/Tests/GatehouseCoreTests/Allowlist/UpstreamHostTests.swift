import Testing

@testable import GatehouseCore

@Suite struct UpstreamHostTests {
    @Test(arguments: [
        ("Wiki.Example.ORG.", "wiki.example.org"),
        ("2130706433", "127.0.0.1"),
        ("0x7f.0.0.1", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("0x7f000001", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("10.0.258", "10.0.1.2"),
        ("[::ffff:127.0.0.1]", "127.0.0.1"),
        ("::ffff:7f00:1", "127.0.0.1"),
        ("[::1]", "::1"),
        ("169.254.169.254", "169.254.169.254"),
    ])
    func normalizes(raw: String, expected: String) {
        #expect(UpstreamHost(raw)?.value == expected)
    }

    @Test(arguments: [
        "", "evil.com\\@wiki.example.org", "wiki%2eexample.org", "wiki.example.org%23", "a b", "a\u{0}b", "user@host", "256.0.0.1.2", "1.2.3.256",
        "0x1g.0.0.1", "..", "a..b", "-a.example.org", "example.123", "[::1", "wïki.example.org",
    ])
    func refusesWhatNoHostCanBe(raw: String) {
        #expect(UpstreamHost(raw) == nil)
    }

    @Test func addressClasses() {
        #expect(AddressClass.of(ipv4: [127, 0, 0, 1]) == .loopback)
        #expect(AddressClass.of(ipv4: [10, 1, 2, 3]) == .privateNetwork)
        #expect(AddressClass.of(ipv4: [172, 20, 0, 1]) == .privateNetwork)
        #expect(AddressClass.of(ipv4: [192, 168, 1, 1]) == .privateNetwork)
        #expect(AddressClass.of(ipv4: [169, 254, 169, 254]) == .linkLocal)
        #expect(AddressClass.of(ipv4: [0, 0, 0, 0]) == .reserved)
        #expect(AddressClass.of(ipv4: [93, 184, 216, 34]) == .global)
        #expect(AddressClass.of(ipv6: "::1") == .loopback)
        #expect(AddressClass.of(ipv6: "::ffff:10.0.0.1") == .privateNetwork)
        #expect(AddressClass.of(ipv6: "fe80::1") == .linkLocal)
        #expect(AddressClass.of(ipv6: "fd00::1") == .privateNetwork)
        #expect(AddressClass.of(ipv6: "2001:db8::1") == .global)
    }

    @Test func allowlistComparesNormalizedHosts() {
        let allowlist = Allowlist(["*.example.org", "apps.example.net", "127.0.0.1"])
        #expect(allowlist.isAllowed(host: "WIKI.example.org."))
        #expect(allowlist.isAllowed(host: "a.b.example.org"))
        #expect(!allowlist.isAllowed(host: "example.org"))  // a wildcard is for subdomains
        #expect(!allowlist.isAllowed(host: "evilexample.org"))
        #expect(!allowlist.isAllowed(host: "example.org.evil.net"))
        #expect(allowlist.isAllowed(host: "apps.example.net"))
        #expect(!allowlist.isAllowed(host: "x.apps.example.net"))
        #expect(allowlist.isAllowed(host: "2130706433"))  // the same address, spelled otherwise
        #expect(!allowlist.isAllowed(host: "evil.com\\@wiki.example.org"))
        #expect(!allowlist.isAllowed(host: "wiki.example.org%2f"))
    }
}
