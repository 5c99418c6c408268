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
        let refusedEscapes: Set<String> = ["2f", "5c", "25", "2e", "00", "09", "0a", "0d"]
        for index in path.indices where path[index] == UInt8(ascii: "%") && index + 2 < path.endIndex {
            if refusedEscapes.contains(String(decoding: path[(index + 1)...(index + 2)], as: UTF8.self).lowercased()) { return false }
        }
        if path.split(separator: UInt8(ascii: "/")).contains(where: {
            $0.elementsEqual([UInt8(ascii: ".")]) || $0.elementsEqual([UInt8(ascii: "."), UInt8(ascii: ".")])
        }) {
            return false
        }
        return true
    }
}
