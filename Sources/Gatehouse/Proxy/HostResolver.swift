import Foundation
import NIOPosix

#if canImport(Glibc)
    import Glibc
#endif

/// One address a name resolved to, as text a connection can use, with its class.
public struct ResolvedAddress: Sendable, Equatable {
    public var text: String
    public var addressClass: AddressClass

    public init(_ text: String, _ addressClass: AddressClass) {
        self.text = text
        self.addressClass = addressClass
    }
}

/// Looks up what a host name resolves to, so that the gateway decides on the addresses it would connect to.
public protocol HostResolver: Sendable {
    func addresses(of host: String) async throws -> [ResolvedAddress]
}

/// `getaddrinfo` on NIO's thread pool, with a short cache.
public actor SystemHostResolver: HostResolver {
    private var cache: [String: (addresses: [ResolvedAddress], until: Date)] = [:]
    private let lifetime: TimeInterval

    public init(lifetime: TimeInterval = 30) {
        self.lifetime = lifetime
    }

    public func addresses(of host: String) async throws -> [ResolvedAddress] {
        if let cached = cache[host], cached.until > Date() { return cached.addresses }
        let addresses = try await NIOThreadPool.singleton.runIfActive { try Self.lookUp(host) }
        cache[host] = (addresses, Date().addingTimeInterval(lifetime))
        return addresses
    }

    static func lookUp(_ host: String) throws -> [ResolvedAddress] {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &result) == 0, let first = result else {
            throw ProxyError.upstreamUnreachable("\(host) does not resolve")
        }
        defer { freeaddrinfo(first) }
        var addresses: [ResolvedAddress] = []
        var pointer: UnsafeMutablePointer<addrinfo>? = first
        while let info = pointer {
            if info.pointee.ai_family == AF_INET, let address = info.pointee.ai_addr {
                let bytes = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { withUnsafeBytes(of: $0.pointee.sin_addr) { Array($0) } }
                addresses.append(ResolvedAddress(bytes.map(String.init).joined(separator: "."), AddressClass.of(ipv4: bytes)))
            } else if info.pointee.ai_family == AF_INET6, let address = info.pointee.ai_addr {
                var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
                address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { pointer in
                    var sin6 = pointer.pointee.sin6_addr
                    _ = inet_ntop(AF_INET6, &sin6, &text, socklen_t(INET6_ADDRSTRLEN))
                }
                let printed = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                addresses.append(ResolvedAddress(printed, AddressClass.of(ipv6: printed)))
            }
            pointer = info.pointee.ai_next
        }
        return addresses
    }
}

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
