/// Addresses the gateway never connects to unless the operator allows it: loopback, private, link-local (cloud
/// metadata lives there), unspecified, multicast and the like.
public enum AddressClass: Sendable, Equatable {
    case loopback
    case privateNetwork
    case linkLocal
    case reserved
    case global

    public static func of(ipv4 bytes: [UInt8]) -> AddressClass {
        switch (bytes[0], bytes[1]) {
        case (127, _): .loopback
        case (10, _), (172, 16...31), (192, 168), (100, 64...127): .privateNetwork
        case (169, 254): .linkLocal
        case (0, _), (224...255, _): .reserved
        default: .global
        }
    }

    /// Classifies a textual IPv6 address (as `getaddrinfo` prints it).
    public static func of(ipv6 text: String) -> AddressClass {
        let lowered = text.lowercased()
        if lowered == "::1" { return .loopback }
        if lowered == "::" { return .reserved }
        if let mapped = UpstreamHost.ipv4Mapped(lowered) { return of(ipv4: mapped) }
        if lowered.hasPrefix("fe8") || lowered.hasPrefix("fe9") || lowered.hasPrefix("fea") || lowered.hasPrefix("feb") { return .linkLocal }
        if lowered.hasPrefix("fc") || lowered.hasPrefix("fd") { return .privateNetwork }
        if lowered.hasPrefix("ff") { return .reserved }
        return .global
    }
}
