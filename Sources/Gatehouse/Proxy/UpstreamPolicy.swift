import Foundation
import GatehouseCore
import NIOConcurrencyHelpers

/// Where a checked request goes: the URL as the app knows it (its name gives `Host` and the TLS server name) and
/// the one address that was checked, which the connection must use; `nil` for a literal address.
public struct UpstreamTarget: Sendable, Equatable {
    public var url: URL
    public var host: String
    public var address: String?
    /// The app's own TLS settings, if it has any.
    public var tls: UpstreamTLS? = nil
}

/// Whether the gateway may send a request to a URL: scheme, allowlist, and the addresses the name resolves to.
public struct UpstreamPolicy: Sendable {
    public let allowlist: Allowlist
    let configuration: ProxyConfiguration
    let resolver: any HostResolver
    /// Names resolved by `check` lately, with what they resolved to and until when that is used without asking again.
    private let recent = NIOLockedValueBox<[String: (addresses: [ResolvedAddress], until: ContinuousClock.Instant)]>([:])

    public init(allowlist: Allowlist, configuration: ProxyConfiguration, resolver: any HostResolver) {
        self.allowlist = allowlist
        self.configuration = configuration
        self.resolver = resolver
    }

    /// Checks `url` and answers where to connect. A name is resolved once, here: every address it gives must be
    /// allowed, and the connection goes to the first of them, never to a second answer (DNS rebinding).
    public func check(_ url: URL) async throws(ProxyError) -> UpstreamTarget {
        let host = try admit(url)
        guard host.kind == .name else { return try pin(url, host: host, to: [literal(host)]) }
        let addresses: [ResolvedAddress]
        do {
            addresses = try await resolver.addresses(of: host.value)
        } catch {
            throw .upstreamUnreachable("\(host.value) does not resolve")
        }
        let target = try pin(url, host: host, to: addresses)
        recent.withLockedValue { $0[host.value] = (addresses, .now + Self.recentLifetime) }
        return target
    }

    /// The same decision without waiting (for the data plane, on an event loop): `nil` when the URL names a host
    /// that was not resolved in the last `recentLifetime`, which `check` then has to do.
    public func checkWithoutWaiting(_ url: URL) throws(ProxyError) -> UpstreamTarget? {
        let host = try admit(url)
        guard host.kind == .name else { return try pin(url, host: host, to: [literal(host)]) }
        guard let addresses = recent.withLockedValue({ $0[host.value] }).flatMap({ $0.until > .now ? $0.addresses : nil }) else { return nil }
        return try pin(url, host: host, to: addresses)
    }

    /// What a name's recent resolution is trusted for: as long as the resolver's own cache.
    static let recentLifetime: Duration = .seconds(30)

    /// The scheme and the allowlist.
    private func admit(_ url: URL) throws(ProxyError) -> UpstreamHost {
        guard let rawHost = url.host, let host = UpstreamHost(rawHost), allowlist.isAllowed(host: rawHost) else {
            throw .hostNotAllowed(url.host ?? url.absoluteString)
        }
        let scheme = url.scheme?.lowercased()
        guard scheme == "https" || (scheme == "http" && configuration.allowHTTPLoopback) else {
            throw .hostNotAllowed("\(scheme ?? "?")://\(host.value)")
        }
        return host
    }

    private func literal(_ host: UpstreamHost) -> ResolvedAddress {
        switch host.kind {
        case .ipv4(let bytes): ResolvedAddress(host.value, AddressClass.of(ipv4: bytes))
        default: ResolvedAddress(host.value, AddressClass.of(ipv6: host.value))
        }
    }

    /// Every address must be allowed; the first is the one to connect to.
    private func pin(_ url: URL, host: UpstreamHost, to addresses: [ResolvedAddress]) throws(ProxyError) -> UpstreamTarget {
        guard let first = addresses.first, addresses.allSatisfy({ isAllowed($0.addressClass) }) else {
            throw .hostNotAllowed("\(host.value) resolves to a forbidden address")
        }
        // Plain http only to loopback (development), judged by the addresses connected to, not by the name.
        if url.scheme?.lowercased() == "http", !addresses.allSatisfy({ $0.addressClass == .loopback }) {
            throw .hostNotAllowed("http://\(host.value) is not loopback")
        }
        return UpstreamTarget(url: url, host: url.host ?? host.value, address: host.kind == .name ? first.text : nil)
    }

    func isAllowed(_ addressClass: AddressClass) -> Bool {
        switch addressClass {
        case .global: true
        case .privateNetwork: configuration.allowPrivateAddresses
        case .loopback: configuration.allowHTTPLoopback
        case .linkLocal, .reserved: false
        }
    }
}
