import Foundation
import NIOPosix

#if canImport(Glibc)
    import Glibc
#endif

/// Looks up what a host name resolves to, so that the gateway decides on the addresses it would connect to.
public protocol HostResolver: Sendable {
    func addresses(of host: String) async throws -> [AddressClass]
}

/// `getaddrinfo` on NIO's thread pool, with a short cache.
public actor SystemHostResolver: HostResolver {
    private var cache: [String: (classes: [AddressClass], until: Date)] = [:]
    private let lifetime: TimeInterval

    public init(lifetime: TimeInterval = 30) {
        self.lifetime = lifetime
    }

    public func addresses(of host: String) async throws -> [AddressClass] {
        if let cached = cache[host], cached.until > Date() { return cached.classes }
        let classes = try await NIOThreadPool.singleton.runIfActive { try Self.lookUp(host) }
        cache[host] = (classes, Date().addingTimeInterval(lifetime))
        return classes
    }

    static func lookUp(_ host: String) throws -> [AddressClass] {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &result) == 0, let first = result else {
            throw ProxyError.upstreamUnreachable("\(host) does not resolve")
        }
        defer { freeaddrinfo(first) }
        var classes: [AddressClass] = []
        var pointer: UnsafeMutablePointer<addrinfo>? = first
        while let info = pointer {
            if info.pointee.ai_family == AF_INET, let address = info.pointee.ai_addr {
                let bytes = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { withUnsafeBytes(of: $0.pointee.sin_addr) { Array($0) } }
                classes.append(AddressClass.of(ipv4: bytes))
            } else if info.pointee.ai_family == AF_INET6, let address = info.pointee.ai_addr {
                var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
                address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { pointer in
                    var sin6 = pointer.pointee.sin6_addr
                    _ = inet_ntop(AF_INET6, &sin6, &text, socklen_t(INET6_ADDRSTRLEN))
                }
                classes.append(AddressClass.of(ipv6: String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)))
            }
            pointer = info.pointee.ai_next
        }
        return classes
    }
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

    public func check(_ url: URL) async throws(ProxyError) {
        guard let rawHost = url.host, let host = UpstreamHost(rawHost), allowlist.isAllowed(host: rawHost) else {
            throw .hostNotAllowed(url.host ?? url.absoluteString)
        }
        let scheme = url.scheme?.lowercased()
        let isLoopbackName = host.value == "localhost" || host.value.hasPrefix("127.") || host.value == "::1"
        guard scheme == "https" || (scheme == "http" && configuration.allowHTTPLoopback && isLoopbackName) else {
            throw .hostNotAllowed("\(scheme ?? "?")://\(host.value)")
        }
        let classes: [AddressClass]
        switch host.kind {
        case .ipv4(let bytes): classes = [AddressClass.of(ipv4: bytes)]
        case .ipv6: classes = [AddressClass.of(ipv6: host.value)]
        case .name:
            do {
                classes = try await resolver.addresses(of: host.value)
            } catch {
                throw .upstreamUnreachable("\(host.value) does not resolve")
            }
        }
        guard !classes.isEmpty, classes.allSatisfy(isAllowed) else { throw .hostNotAllowed("\(host.value) resolves to a forbidden address") }
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
