import Foundation

/// An IPv4 or IPv6 address as its bytes (4 or 16); an IPv4-mapped IPv6 address is the IPv4 address it maps.
public struct IPAddress: Hashable, Sendable, CustomStringConvertible {
    public let bytes: [UInt8]

    public init?(_ text: some StringProtocol) {
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

    public var isIPv4: Bool { bytes.count == 4 }

    public var description: String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        return bytes.withUnsafeBytes { raw in
            inet_ntop(isIPv4 ? AF_INET : AF_INET6, raw.baseAddress, &buffer, socklen_t(buffer.count)).map { String(cString: $0) } ?? "?"
        }
    }

    /// What a rate limit counts against: the address itself for IPv4, its /64 for IPv6 (one subscriber's share,
    /// which a single client can pick any address from).
    public var rateLimitKey: String {
        isIPv4 ? description : IPAddress(bytes: Array(bytes.prefix(8)) + Array(repeating: 0, count: 8)).description + "/64"
    }

    init(bytes: [UInt8]) { self.bytes = bytes }
}

/// An address block in CIDR notation (`10.0.0.0/8`, `fd00::/8`), or one address (a /32 or /128).
public struct IPNetwork: Sendable, Equatable, CustomStringConvertible {
    public let base: IPAddress
    public let prefixLength: Int

    public init?(_ text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count <= 2, let base = IPAddress(parts[0]) else { return nil }
        // An IPv4-mapped block (`::ffff:10.0.0.0/104`) is written in IPv6 bits and kept as the IPv4 block it maps.
        let written = base.isIPv4 && parts[0].contains(":") ? 96 : 0
        let maximum = written + base.bytes.count * 8
        guard let length = parts.count == 2 ? Int(parts[1]) : maximum, (written...maximum).contains(length) else { return nil }
        self.base = base
        self.prefixLength = length - written
    }

    public func contains(_ address: IPAddress) -> Bool {
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

    public var description: String { "\(base)/\(prefixLength)" }
}

extension IPNetwork: Codable {
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let network = IPNetwork(text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not an address block: \(text)"))
        }
        self = network
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }

    /// The network a client's address is on, as far as a session's use goes: its IPv4 /24, its IPv6 /64 (one
    /// subscriber's share). A member's address moving within it is the same network.
    public static func of(_ address: IPAddress) -> IPNetwork {
        let length = address.isIPv4 ? 24 : 64
        let kept = length / 8
        let masked = Array(address.bytes.prefix(kept)) + Array(repeating: 0, count: address.bytes.count - kept)
        return IPNetwork(base: IPAddress(bytes: masked), prefixLength: length)
    }

    private init(base: IPAddress, prefixLength: Int) {
        self.base = base
        self.prefixLength = prefixLength
    }
}
