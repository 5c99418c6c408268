/// A same-origin gateway path that a member is sent to after sign-in.
///
/// Only a path that starts with exactly one `/` and carries nothing a browser or a server could read as another
/// origin is accepted: no scheme, no `//` or `/\`, no backslash anywhere, no encoded slash, backslash, percent or
/// dot in the path, no dot segments, no control characters, whitespace or non-ASCII anywhere. The rule holds for the
/// target decoded too, as whatever reads it next may decode it: nothing anywhere (query included) that decodes to a
/// control character (`%01`, `%7f`), and no segment ending in `:` before `//` (`/https://evil.example`, or
/// `/https%3a//evil.example`), which a handler that drops the leading `/` would follow to another origin.
public struct ReturnTarget: Sendable, Equatable, CustomStringConvertible {
    public let path: String

    public static let maximumLength = 2048

    public init?(_ candidate: String) {
        guard Self.isAcceptable(candidate) else { return nil }
        self.path = candidate
    }

    public var description: String { path }

    /// Escapes refused in a path, as their two hex digits in lower case.
    static let refusedEscapes: [(UInt8, UInt8)] = ["2f", "5c", "25", "2e", "00", "09", "0a", "0d"].map {
        let digits = Array($0.utf8)
        return (digits[0], digits[1])
    }

    public static func isAcceptable(_ candidate: String) -> Bool {
        let bytes = Array(candidate.utf8)
        guard !bytes.isEmpty, bytes.count <= maximumLength, bytes[0] == UInt8(ascii: "/") else { return false }
        if bytes.count > 1, bytes[1] == UInt8(ascii: "/") || bytes[1] == UInt8(ascii: "\\") { return false }
        for byte in bytes {
            // Control characters, space, DEL, backslash and anything outside ASCII are never part of a path we issue.
            if byte <= 0x20 || byte >= 0x7F || byte == UInt8(ascii: "\\") { return false }
        }
        let path = bytes.prefix { $0 != UInt8(ascii: "?") }
        // In the path, an encoded slash, backslash, percent, dot or control character can be decoded into an
        // escape later on; in the query (`?next=%2Fx`) it is only data.
        for index in path.indices where path[index] == UInt8(ascii: "%") && index + 2 < path.endIndex {
            let escape = (path[index + 1].asciiLowercased, path[index + 2].asciiLowercased)
            if refusedEscapes.contains(where: { $0 == escape }) { return false }
        }
        if Self.decodesToControlCharacter(bytes) || Self.holdsSchemeBeforeDoubleSlash(Self.percentDecoded(path)) { return false }
        // No `.` or `..` segment.
        var segmentStart = path.startIndex
        for index in path.indices where path[index] == UInt8(ascii: "/") || index == path.endIndex - 1 {
            let segment = path[segmentStart..<(path[index] == UInt8(ascii: "/") ? index : index + 1)]
            if !segment.isEmpty, segment.count <= 2, segment.allSatisfy({ $0 == UInt8(ascii: ".") }) { return false }
            segmentStart = index + 1
        }
        return true
    }

    /// Whether a `%XX` escape anywhere stands for a control character (C0 or DEL).
    static func decodesToControlCharacter(_ bytes: [UInt8]) -> Bool {
        var index = bytes.startIndex
        while index + 2 < bytes.endIndex {
            if bytes[index] == UInt8(ascii: "%"), let value = hexValue(bytes[index + 1], bytes[index + 2]), value < 0x20 || value == 0x7F {
                return true
            }
            index += 1
        }
        return false
    }

    /// `:` followed by `//` anywhere in the path.
    static func holdsSchemeBeforeDoubleSlash(_ path: [UInt8]) -> Bool {
        guard path.count >= 3 else { return false }
        return (0..<(path.count - 2)).contains {
            path[$0] == UInt8(ascii: ":") && path[$0 + 1] == UInt8(ascii: "/") && path[$0 + 2] == UInt8(ascii: "/")
        }
    }

    /// The bytes with each valid `%XX` escape decoded once (a broken one kept as written).
    static func percentDecoded<Bytes: Collection>(_ bytes: Bytes) -> [UInt8] where Bytes.Element == UInt8 {
        let bytes = Array(bytes)
        var decoded: [UInt8] = []
        decoded.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count, let value = hexValue(bytes[index + 1], bytes[index + 2]) {
                decoded.append(value)
                index += 3
            } else {
                decoded.append(bytes[index])
                index += 1
            }
        }
        return decoded
    }

    static func hexValue(_ high: UInt8, _ low: UInt8) -> UInt8? {
        func digit(_ byte: UInt8) -> UInt8? {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        guard let high = digit(high), let low = digit(low) else { return nil }
        return high << 4 | low
    }
}
