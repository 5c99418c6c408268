/// A host name as the resolver will see it: lower-case, one trailing dot removed, IPv4 literals in any of the
/// forms `inet_aton` accepts (decimal `2130706433`, octal `0177.0.0.1`, hex `0x7f.1`) turned into dotted decimal,
/// IPv4-mapped IPv6 turned into IPv4. Hosts carrying characters a host cannot hold (`%`, `\`, `@`, space, control
/// characters) are refused rather than guessed at.
public struct UpstreamHost: Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        case name
        case ipv4([UInt8])
        case ipv6
    }

    public let value: String
    public let kind: Kind

    public var description: String { value }

    public init?(_ raw: String) {
        var host = raw.lowercased()
        if host.hasPrefix("[") {
            guard host.hasSuffix("]") else { return nil }
            host = String(host.dropFirst().dropLast())
        }
        if host.hasSuffix(".") { host.removeLast() }
        guard !host.isEmpty, host.utf8.count <= 253 else { return nil }
        if host.contains(":") {
            guard host.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else { return nil }
            if let mapped = Self.ipv4Mapped(host) {
                (value, kind) = (mapped.map(String.init).joined(separator: "."), .ipv4(mapped))
            } else {
                (value, kind) = (host, .ipv6)
            }
            return
        }
        guard host.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "-" || $0 == ".") })
        else { return nil }
        if let address = Self.ipv4(host) {
            (value, kind) = (address.map(String.init).joined(separator: "."), .ipv4(address))
        } else {
            guard !host.hasPrefix("."), !host.contains(".."), host.split(separator: ".").allSatisfy({ $0.count <= 63 && !$0.hasPrefix("-") })
            else { return nil }
            // A last label of digits only is an IPv4 attempt that did not parse (WHATWG URL §3.5): refuse.
            if let last = host.split(separator: ".").last, last.allSatisfy(\.isNumber) { return nil }
            (value, kind) = (host, .name)
        }
    }

    /// `inet_aton` semantics: 1–4 parts, each decimal, octal (leading 0) or hex (0x); the last part fills the rest.
    static func ipv4(_ host: String) -> [UInt8]? {
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...4).contains(parts.count) else { return nil }
        var numbers: [UInt64] = []
        for part in parts {
            let text = part.lowercased()
            let number: UInt64?
            if text.hasPrefix("0x") {
                number = text.count == 2 ? 0 : UInt64(text.dropFirst(2), radix: 16)
            } else if text.count > 1 && text.hasPrefix("0") {
                number = UInt64(text.dropFirst(), radix: 8)
            } else {
                number = UInt64(text, radix: 10)
            }
            guard let number, text.count <= 20 else { return nil }
            numbers.append(number)
        }
        guard numbers.dropLast().allSatisfy({ $0 <= 255 }) else { return nil }
        let remainingBytes = 5 - numbers.count
        guard numbers.last! < (UInt64(1) << (8 * UInt64(remainingBytes))) else { return nil }
        var address = numbers.dropLast().map { UInt8($0) }
        let last = numbers.last!
        for shift in stride(from: 8 * (remainingBytes - 1), through: 0, by: -8) { address.append(UInt8((last >> UInt64(shift)) & 0xFF)) }
        return address
    }

    /// `::ffff:a.b.c.d` or `::ffff:7f00:1`.
    static func ipv4Mapped(_ host: String) -> [UInt8]? {
        guard host.hasPrefix("::ffff:") else { return nil }
        let rest = String(host.dropFirst(7))
        if rest.contains(".") { return ipv4(rest).flatMap { rest.split(separator: ".").count == 4 ? $0 : nil } }
        let groups = rest.split(separator: ":")
        guard groups.count == 2, let high = UInt16(groups[0], radix: 16), let low = UInt16(groups[1], radix: 16) else { return nil }
        return [UInt8(high >> 8), UInt8(high & 0xFF), UInt8(low >> 8), UInt8(low & 0xFF)]
    }
}
