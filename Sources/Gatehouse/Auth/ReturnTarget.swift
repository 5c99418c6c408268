/// A same-origin gateway path that a member is sent to after sign-in.
///
/// Only a path that starts with exactly one `/` and carries nothing a browser or a server could read as another
/// origin is accepted: no scheme, no `//` or `/\`, no backslash anywhere, no encoded slash, backslash or dot
/// segment, no control characters or whitespace.
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
        let lowered = candidate.lowercased()
        // Encoded slash, backslash, percent, dot or control characters can be decoded into an escape later on.
        for encoded in ["%2f", "%5c", "%25", "%2e", "%00", "%09", "%0a", "%0d"] where lowered.contains(encoded) {
            return false
        }
        let pathPart = candidate.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0]
        if pathPart.split(separator: "/").contains(where: { $0 == ".." || $0 == "." }) { return false }
        return true
    }
}
