import Foundation
import GatehouseCore

/// Where a checked request goes: the URL as the app knows it (its name gives `Host` and the TLS server name) and
/// the one address that was checked, which the connection must use; `nil` for a literal address.
public struct UpstreamTarget: Sendable, Equatable {
    public var url: URL
    public var host: String
    public var address: String?
}

/// Whether the gateway may send a request to a URL: scheme, allowlist, and the addresses the name resolves to.
public struct UpstreamPolicy: Sendable {
    public let allowlist: Allowlist
    let configuration: ProxyConfiguration
    let resolver: any HostResolver

    public init(allowlist: Allowlist, configuration: ProxyConfiguration, resolver: any HostResolver) {
        self.allowlist = allowlist
        self.configuration = configuration
        self.resolver = resolver
    }

    /// Checks `url` and answers where to connect. A name is resolved once, here: every address it gives must be
    /// allowed, and the connection goes to the first of them, never to a second answer (DNS rebinding).
    public func check(_ url: URL) async throws(ProxyError) -> UpstreamTarget {
        guard let rawHost = url.host, let host = UpstreamHost(rawHost), allowlist.isAllowed(host: rawHost) else {
            throw .hostNotAllowed(url.host ?? url.absoluteString)
        }
        let scheme = url.scheme?.lowercased()
        guard scheme == "https" || (scheme == "http" && configuration.allowHTTPLoopback) else {
            throw .hostNotAllowed("\(scheme ?? "?")://\(host.value)")
        }
        let addresses: [ResolvedAddress]
        switch host.kind {
        case .ipv4(let bytes): addresses = [ResolvedAddress(host.value, AddressClass.of(ipv4: bytes))]
        case .ipv6: addresses = [ResolvedAddress(host.value, AddressClass.of(ipv6: host.value))]
        case .name:
            do {
                addresses = try await resolver.addresses(of: host.value)
            } catch {
                throw .upstreamUnreachable("\(host.value) does not resolve")
            }
        }
        guard let first = addresses.first, addresses.allSatisfy({ isAllowed($0.addressClass) }) else {
            throw .hostNotAllowed("\(host.value) resolves to a forbidden address")
        }
        // Plain http only to loopback (development), judged by the addresses connected to, not by the name.
        if scheme == "http", !addresses.allSatisfy({ $0.addressClass == .loopback }) {
            throw .hostNotAllowed("http://\(host.value) is not loopback")
        }
        return UpstreamTarget(url: url, host: rawHost, address: host.kind == .name ? first.text : nil)
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
