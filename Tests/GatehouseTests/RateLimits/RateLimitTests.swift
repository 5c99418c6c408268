import Foundation
import GatehouseCore
import Testing

@testable import Gatehouse

@Suite struct RateLimitTests {
    let rule = RateLimitRule(limit: 3, periodSeconds: 60)

    @Test func aRuleLetsItsLimitThroughThenOneRequestPerIntervalAsTimePasses() {
        var usedUntil: Double?
        for _ in 0..<3 {
            guard case .allowed(let next) = rule.decide(usedUntil: usedUntil, now: 1000) else {
                Issue.record("refused within the limit")
                return
            }
            usedUntil = next
        }
        #expect(rule.decide(usedUntil: usedUntil, now: 1000) == .limited(retryAfter: 20))
        #expect(rule.decide(usedUntil: usedUntil, now: 1019) == .limited(retryAfter: 1))
        // One interval later exactly one request more, not three.
        guard case .allowed(let next) = rule.decide(usedUntil: usedUntil, now: 1020) else {
            Issue.record("not released after the interval")
            return
        }
        #expect(rule.decide(usedUntil: next, now: 1020) == .limited(retryAfter: 20))
        // A quiet period makes the allowance whole again, and no more than whole.
        #expect(rule.decide(usedUntil: next, now: 5000) == .allowed(usedUntil: 5020))
    }

    @Test(arguments: [StoreBackend.sqlite, .postgres])
    func storesCountEachKeyOnItsOwnAndNeverLetMoreThroughUnderConcurrency(backend: StoreBackend) async throws {
        try await backend.withStores { stores in
            let now = Date()
            let rule = RateLimitRule(limit: 5, periodSeconds: 3600)
            let decisions = try await withThrowingTaskGroup(of: RateLimitDecision.self) { group in
                for _ in 0..<40 { group.addTask { try await stores.rateLimits.admit(key: "callback:192.0.2.1", rule: rule, now: now) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let allowed = decisions.filter { if case .allowed = $0 { true } else { false } }
            #expect(allowed.count == 5)
            // Every refusal says how long: up to one interval (720 s).
            for case .limited(let wait) in decisions { #expect(wait >= 0 && wait <= 720) }

            // Another address, another member: untouched by the first one's storm.
            #expect(
                try await stores.rateLimits.admit(key: "callback:192.0.2.2", rule: rule, now: now)
                    == .allowed(usedUntil: now.timeIntervalSince1970 + 720))

            // An hour later both are whole again, and the sweep forgets them.
            let later = now.addingTimeInterval(3601)
            #expect(try await stores.rateLimits.deleteExpired(now: later) == 2)
            #expect(
                try await stores.rateLimits.admit(key: "callback:192.0.2.1", rule: rule, now: later)
                    == .allowed(usedUntil: later.timeIntervalSince1970 + 720))
        }
    }
}

@Suite struct ClientAddressTests {
    @Test func addressesAndBlocksParseStrictly() throws {
        #expect(IPAddress("192.0.2.7")?.description == "192.0.2.7")
        #expect(IPAddress("[2001:db8::1]")?.description == "2001:db8::1")
        #expect(IPAddress("::ffff:192.0.2.7")?.description == "192.0.2.7")
        for hostile in ["", "unknown", "192.0.2.300", "192.0.2.7:443", "192.0.2.7 ", "example.org", "1.2.3", "::1%eth0%"] {
            #expect(IPAddress(hostile) == nil, "\(hostile)")
        }
        let block = try #require(IPNetwork("10.0.0.0/8"))
        #expect(block.contains(IPAddress("10.200.3.4")!))
        #expect(!block.contains(IPAddress("11.0.0.1")!))
        #expect(!block.contains(IPAddress("::ffff:11.0.0.1")!))
        #expect(block.contains(IPAddress("::ffff:10.0.0.1")!))
        #expect(IPNetwork("::ffff:10.0.0.0/104")?.contains(IPAddress("10.9.9.9")!) == true)
        #expect(IPNetwork("fd00::/8")?.contains(IPAddress("fd12::1")!) == true)
        #expect(IPNetwork("fd00::/8")?.contains(IPAddress("10.0.0.1")!) == false)
        #expect(
            ClientAddressResolver.invalidEntries(["10.0.0.0/8", "10.0.0.0/33", "lb.internal", "::/129", "fd00::/8", "0.0.0.0/0"]) == [
                "10.0.0.0/33", "lb.internal", "::/129",
            ])
    }

    @Test func forwardedForIsBelievedOnlyFromATrustedProxyAndOnlyUpToTheFirstUntrustedHop() {
        let resolver = ClientAddressResolver(trustedProxies: ["10.0.0.0/8", "2001:db8:1b::/48"])
        // Not from the balancer: whatever the header says, the peer is the client.
        #expect(resolver.resolve(peer: "198.51.100.9", forwardedFor: ["203.0.113.5"]) == "198.51.100.9")
        // From the balancer: the hop it appended.
        #expect(resolver.resolve(peer: "10.0.0.2", forwardedFor: ["203.0.113.5"]) == "203.0.113.5")
        // A client that sends its own X-Forwarded-For: only the balancer's hop counts, not the forged ones before it.
        #expect(resolver.resolve(peer: "10.0.0.2", forwardedFor: ["1.1.1.1, 10.0.0.9", "203.0.113.5"]) == "203.0.113.5")
        // Through two trusted proxies.
        #expect(resolver.resolve(peer: "10.0.0.2", forwardedFor: ["203.0.113.5, 10.0.0.7"]) == "203.0.113.5")
        // Garbage where the balancer's hop should be: the balancer itself, never the garbage.
        #expect(resolver.resolve(peer: "10.0.0.2", forwardedFor: ["203.0.113.5, not-an-address"]) == "10.0.0.2")
        #expect(resolver.resolve(peer: "10.0.0.2", forwardedFor: []) == "10.0.0.2")
        #expect(resolver.resolve(peer: "2001:db8:1b::1", forwardedFor: ["2001:db8:1:2::99"]) == "2001:db8:1:2::99")
        // Nobody trusted: the header is never read.
        #expect(ClientAddressResolver(trustedProxies: []).resolve(peer: "10.0.0.2", forwardedFor: ["203.0.113.5"]) == "10.0.0.2")
    }

    @Test func anIPv6ClientCountsByItsSlash64() {
        #expect(IPAddress("2001:db8:1:2:aaaa::1")?.rateLimitKey == IPAddress("2001:db8:1:2:bbbb::9")?.rateLimitKey)
        #expect(IPAddress("2001:db8:1:3::1")?.rateLimitKey != IPAddress("2001:db8:1:2::1")?.rateLimitKey)
        #expect(IPAddress("192.0.2.7")?.rateLimitKey == "192.0.2.7")
    }
}
