import Foundation
import Testing

@testable import GatehouseCore

/// What decides access by address and host and was least covered (`scripts/coverage`): the key a client's rate
/// limits are counted under, the network a session is bound to, and which allowlist entries the configuration takes.
@Suite struct AddressRulesTests {
    @Test func anIPv6ClientIsCountedByItsSlash64SoRotatingAddressesGainsNothing() throws {
        let one = try #require(IPAddress("2001:db8:1:2:aaaa::1"))
        let other = try #require(IPAddress("2001:db8:1:2:ffff:ffff:ffff:ffff"))
        let neighbour = try #require(IPAddress("2001:db8:1:3::1"))
        #expect(one.rateLimitKey == "2001:db8:1:2::/64" && one.rateLimitKey == other.rateLimitKey)
        #expect(neighbour.rateLimitKey != one.rateLimitKey)
        // IPv4 clients are counted one by one; a mapped form reads as the IPv4 address.
        #expect(try #require(IPAddress("203.0.113.7")).rateLimitKey == "203.0.113.7")
        #expect(try #require(IPAddress("203.0.113.7")).description == "203.0.113.7")
    }

    @Test func aSessionsNetworkIsTheSlash24OrSlash64OfItsAddress() throws {
        func address(_ text: String) throws -> IPAddress { try #require(IPAddress(text)) }
        let v4 = IPNetwork.of(try address("198.51.100.200"))
        #expect(v4.description == "198.51.100.0/24")
        #expect(try v4.contains(address("198.51.100.1")))
        #expect(try !v4.contains(address("198.51.101.1")))
        let v6 = IPNetwork.of(try address("2001:db8:aa:bb:1:2:3:4"))
        #expect(v6.description == "2001:db8:aa:bb::/64")
        #expect(try v6.contains(address("2001:db8:aa:bb::9")))
        #expect(try !v6.contains(address("2001:db8:aa:bc::9")))
        // An IPv4 network never holds an IPv6 address of other bytes.
        #expect(try !v4.contains(address("2001:db8::c633:6401")))
    }

    @Test func aNetworkIsStoredAsTextAndHostileTextIsRefused() throws {
        let network = try #require(IPNetwork("10.0.0.0/8"))
        let stored = try JSONEncoder().encode([network])
        #expect(String(decoding: stored, as: UTF8.self) == #"["10.0.0.0\/8"]"#)
        #expect(try JSONDecoder().decode([IPNetwork].self, from: stored) == [network])
        for hostile in ["10.0.0.0/33", "10.0.0.0/-1", "not a network", "", "10.0.0.0/8/8", "::/129", "999.0.0.0/8"] {
            #expect(throws: DecodingError.self, "\(hostile)") {
                try JSONDecoder().decode([IPNetwork].self, from: Data(#"["\#(hostile)"]"#.utf8))
            }
        }
    }

    @Test func allowlistEntriesAreHostsOrWildcardsBelowADomainOnly() {
        for valid in ["wiki.example.org", "*.example.org", "127.0.0.1", "[::1]", "host-1.example.org", "example.org:8443"] {
            #expect(Allowlist.isValidEntry(valid), "\(valid)")
        }
        // A wildcard over a whole top-level domain, a wildcard anywhere else, or anything that is not a host.
        for hostile in ["*.com", "*", "*.", "", "wiki.*.org", "**.example.org", "example.org/path", "user@example.org", "exa mple.org",
            "example.org\r\nX-Injected: 1", "https://example.org"]
        {
            #expect(!Allowlist.isValidEntry(hostile), "\(hostile)")
        }
    }
}
