import Foundation
import GatehouseCore
import Testing

@testable import Gatehouse

@Suite struct UpstreamPolicyTests {
    /// Answers from a fixed table, for names whose real answers this machine cannot give.
    struct TableResolver: HostResolver {
        let answers: [String: [AddressClass]]
        func addresses(of host: String) async throws -> [ResolvedAddress] {
            guard let classes = answers[host] else { throw ProxyError.upstreamUnreachable(host) }
            return classes.enumerated().map { ResolvedAddress("192.0.2.\($0.offset + 1)", $0.element) }
        }
    }

    func policy(_ configuration: ProxyConfiguration = .init(), resolver: any HostResolver = SystemHostResolver()) -> UpstreamPolicy {
        UpstreamPolicy(
            allowlist: Allowlist(["*.example.org", "localhost", "127.0.0.1", "2001:db8::1"]), configuration: configuration, resolver: resolver)
    }

    func refuses(_ policy: UpstreamPolicy, _ url: String) async -> Bool {
        do {
            _ = try await policy.check(URL(string: url)!)
            return false
        } catch {
            return true
        }
    }

    @Test func theSystemResolverDecidesOnRealAddresses() async {
        // `localhost` is on the allowlist, but it resolves to loopback: refused unless loopback is allowed.
        #expect(await refuses(policy(), "https://localhost/"))
        #expect(await !refuses(policy(.init(allowHTTPLoopback: true)), "http://localhost/"))
        #expect(await refuses(policy(.init(allowHTTPLoopback: true)), "http://wiki.example.org/"))  // plain http only to loopback
    }

    @Test func namesPointingInsideAreRefused() async {
        let resolver = TableResolver(answers: [
            "wiki.example.org": [.global], "rebind.example.org": [.global, .loopback], "meta.example.org": [.linkLocal],
            "intranet.example.org": [.privateNetwork], "zero.example.org": [.reserved],
        ])
        let strict = policy(resolver: resolver)
        #expect(await !refuses(strict, "https://wiki.example.org/"))
        #expect(await refuses(strict, "https://rebind.example.org/"))  // any inside address is enough
        #expect(await refuses(strict, "https://meta.example.org/latest/meta-data"))
        #expect(await refuses(strict, "https://intranet.example.org/"))
        #expect(await refuses(strict, "https://zero.example.org/"))
        #expect(await refuses(strict, "https://unknown.example.org/"))  // does not resolve
        let intranet = policy(.init(allowPrivateAddresses: true), resolver: resolver)
        #expect(await !refuses(intranet, "https://intranet.example.org/"))
        #expect(await refuses(intranet, "https://meta.example.org/"))  // link-local never
    }

    @Test func literalAddressesInEverySpellingAreClassifiedWithoutDNS() async {
        let loopbackAllowed = policy(.init(allowHTTPLoopback: true), resolver: TableResolver(answers: [:]))
        for url in ["http://127.0.0.1/", "http://2130706433/", "http://0x7f.0.0.1/", "http://0177.0.0.1/", "http://[::ffff:127.0.0.1]/"] {
            #expect(await !refuses(loopbackAllowed, url), "\(url)")
        }
        let strict = policy(resolver: TableResolver(answers: [:]))
        for url in ["https://127.0.0.1/", "https://2130706433/", "https://[::ffff:7f00:1]/", "https://[2001:db8::1]/"] {
            #expect(await refuses(strict, url) == (url != "https://[2001:db8::1]/"), "\(url)")
        }
    }

    @Test func hostileSpellingsAreNotOnTheAllowlist() async {
        let strict = policy(resolver: TableResolver(answers: ["wiki.example.org": [.global]]))
        for url in ["https://evil.example/", "https://wiki.example.org.evil.example/", "https://example.org/", "ftp://wiki.example.org/"] {
            #expect(await refuses(strict, url), "\(url)")
        }
        #expect(await !refuses(strict, "https://WIKI.Example.Org./"))
    }
}
