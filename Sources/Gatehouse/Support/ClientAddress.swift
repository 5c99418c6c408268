import Foundation
import HTTPTypes

#if canImport(Glibc)
    import Glibc
#endif

/// An IPv4 or IPv6 address as its bytes (4 or 16); an IPv4-mapped IPv6 address is the IPv4 address it maps.
struct IPAddress: Hashable, Sendable, CustomStringConvertible {
    let bytes: [UInt8]

    init?(_ text: some StringProtocol) {
        var text = String(text)
        if text.hasPrefix("["), text.hasSuffix("]") { text = String(text.dropFirst().dropLast()) }
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            bytes = withUnsafeBytes(of: &v4) { Array($0) }
            return
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        let all = withUnsafeBytes(of: &v6) { Array($0) }
        bytes = all.prefix(12) == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF] ? Array(all.suffix(4)) : all
    }

    var isIPv4: Bool { bytes.count == 4 }

    var description: String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        return bytes.withUnsafeBytes { raw in
            inet_ntop(isIPv4 ? AF_INET : AF_INET6, raw.baseAddress, &buffer, socklen_t(buffer.count)).map { String(cString: $0) } ?? "?"
        }
    }

    /// What a rate limit counts against: the address itself for IPv4, its /64 for IPv6 (one subscriber's share,
    /// which a single client can pick any address from).
    var rateLimitKey: String {
        isIPv4 ? description : IPAddress(bytes: Array(bytes.prefix(8)) + Array(repeating: 0, count: 8)).description + "/64"
    }

    private init(bytes: [UInt8]) { self.bytes = bytes }
}

/// An address block in CIDR notation (`10.0.0.0/8`, `fd00::/8`), or one address (a /32 or /128).
struct IPNetwork: Sendable, Equatable {
    let base: IPAddress
    let prefixLength: Int

    init?(_ text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count <= 2, let base = IPAddress(parts[0]) else { return nil }
        // An IPv4-mapped block (`::ffff:10.0.0.0/104`) is written in IPv6 bits and kept as the IPv4 block it maps.
        let written = base.isIPv4 && parts[0].contains(":") ? 96 : 0
        let maximum = written + base.bytes.count * 8
        guard let length = parts.count == 2 ? Int(parts[1]) : maximum, (written...maximum).contains(length) else { return nil }
        self.base = base
        self.prefixLength = length - written
    }

    func contains(_ address: IPAddress) -> Bool {
        guard address.bytes.count == base.bytes.count else { return false }
        var remaining = prefixLength
        for (a, b) in zip(address.bytes, base.bytes) where remaining > 0 {
            let bits = min(8, remaining)
            let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
            if a & mask != b & mask { return false }
            remaining -= bits
        }
        return true
    }
}

/// Who sent a request: the connection's peer, unless the peer is a proxy the operator trusts (a load balancer), in
/// which case the nearest address in `X-Forwarded-For` that is not a trusted proxy. Anything left of that address
/// came from the client itself and is never believed.
struct ClientAddressResolver: Sendable {
    let trustedProxies: [IPNetwork]

    /// The addresses that fail to parse as `listen.trusted_proxies` entries, for the configuration check.
    static func invalidEntries(_ entries: [String]) -> [String] {
        entries.filter { IPNetwork($0) == nil }
    }

    init(trustedProxies entries: [String]) {
        trustedProxies = entries.compactMap(IPNetwork.init)
    }

    var trustsAnyProxy: Bool { !trustedProxies.isEmpty }

    func isTrusted(_ address: IPAddress) -> Bool {
        trustedProxies.contains { $0.contains(address) }
    }

    /// The client's address; `forwardedFor` is every `X-Forwarded-For` field in order.
    func resolve(peer: String?, forwardedFor: [String]) -> String? {
        guard let peer, var nearest = IPAddress(peer), isTrusted(nearest) else { return peer }
        let hops = forwardedFor.flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces) }
        for hop in hops.reversed() {
            // A hop that is not an address was not written by a proxy we trust: stop at the last one that was.
            guard let address = IPAddress(hop) else { break }
            nearest = address
            if !isTrusted(address) { break }
        }
        return nearest.description
    }
}

extension HTTPField.Name {
    static let xForwardedFor = Self("X-Forwarded-For")!
}
