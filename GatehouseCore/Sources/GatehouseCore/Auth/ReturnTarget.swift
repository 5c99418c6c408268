/// A same-origin gateway path that a member is sent to after sign-in.
///
/// Only a path that starts with exactly one `/` and carries nothing a browser or a server could read as another
/// origin is accepted: no scheme, no `//` or `/\`, no backslash anywhere, no encoded slash, backslash, percent or
/// dot in the path, no dot segments, no control characters, whitespace or non-ASCII anywhere.
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
        // No `.` or `..` segment.
        var segmentStart = path.startIndex
        for index in path.indices where path[index] == UInt8(ascii: "/") || index == path.endIndex - 1 {
            let segment = path[segmentStart..<(path[index] == UInt8(ascii: "/") ? index : index + 1)]
            if !segment.isEmpty, segment.count <= 2, segment.allSatisfy({ $0 == UInt8(ascii: ".") }) { return false }
            segmentStart = index + 1
        }
        return true
    }
}
