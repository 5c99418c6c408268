/// The domains the gateway may talk to: exact hosts and `*.domain` wildcards (a wildcard matches subdomains only).
public struct Allowlist: Sendable, Equatable {
    public let entries: [String]

    public init(_ entries: [String]) {
        self.entries = entries.map { entry in
            entry.hasPrefix("*.") ? "*." + (UpstreamHost(String(entry.dropFirst(2)))?.value ?? entry) : (UpstreamHost(entry)?.value ?? entry)
        }
    }

    /// Compares the host as the resolver will see it (see `UpstreamHost`); a wildcard never matches an IP address.
    public func isAllowed(host raw: String) -> Bool {
        guard let host = UpstreamHost(raw) else { return false }
        return entries.contains { entry in
            if entry.hasPrefix("*.") {
                return host.kind == .name && host.value.hasSuffix(String(entry.dropFirst(1)))
            }
            return host.value == entry
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
