/// The domains the gateway may talk to: exact hosts and `*.domain` wildcards (a wildcard matches subdomains only).
public struct Allowlist: Sendable, Equatable {
    public let entries: [String]

    public init(_ entries: [String]) {
        self.entries = entries.map { Self.normalize($0) }
    }

    /// Lower-cased, without one trailing dot.
    static func normalize(_ host: String) -> String {
        var host = host.lowercased()
        if host.hasSuffix(".") { host.removeLast() }
        return host
    }

    public func isAllowed(host: String) -> Bool {
        let host = Self.normalize(host)
        guard !host.isEmpty else { return false }
        return entries.contains { entry in
            if entry.hasPrefix("*.") {
                return host.hasSuffix(String(entry.dropFirst(1))) && host.count > entry.count - 1
            }
            return host == entry
        }
    }

    /// Whether `entry` is a well-formed allowlist entry (problems are reported by configuration validation).
    public static func isValidEntry(_ entry: String) -> Bool {
        let body = entry.hasPrefix("*.") ? String(entry.dropFirst(2)) : entry
        guard !body.isEmpty, !body.contains("*") else { return false }
        if entry.hasPrefix("*.") && !body.contains(".") { return false }  // `*.com` would allow a whole TLD
        return body.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "." || $0 == ":" || $0 == "[" || $0 == "]" }
    }
}
