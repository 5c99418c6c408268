import Foundation
import GatehouseCore
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
