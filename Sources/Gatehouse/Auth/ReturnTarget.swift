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
        let pathPart = candidate.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0]
        let lowered = pathPart.lowercased()
        // In the path, an encoded slash, backslash, percent, dot or control character can be decoded into an
        // escape later on; in the query (`?next=%2Fx`) it is only data.
        for encoded in ["%2f", "%5c", "%25", "%2e", "%00", "%09", "%0a", "%0d"] where lowered.contains(encoded) {
            return false
        }
        if pathPart.split(separator: "/").contains(where: { $0 == ".." || $0 == "." }) { return false }
        return true
    }
}
