/// Which `Domain` a cookie from an app may name: the gateway's own public suffix list.
///
/// Browsers refuse cookies for public suffixes; an organization's multi-tenant domains need the same boundary,
/// because every app shares the member's one jar. The parent of each wildcard allowlist entry (`apps.example.org`
/// for `*.apps.example.org`) is a boundary, operators can name more, and a cookie's domain is never wider than the
/// allowlist entry that admitted the host setting it: an exactly listed host sets host-only cookies, a host admitted
/// by `*.apps.example.org` may name a domain below `apps.example.org`, never that or anything above it.
public struct CookieDomainPolicy: Sendable, Equatable {
    /// Parents of wildcard entries, widest first; `nil` means no allowlist applies (the browser's rules alone).
    let wildcardParents: [String]?
    let boundaries: Set<String>

    public init(allowlist: Allowlist, boundaries: [String] = []) {
        let parents = allowlist.entries.filter { $0.hasPrefix("*.") }.map { String($0.dropFirst(2)) }
        self.wildcardParents = parents.sorted { $0.count < $1.count }
        self.boundaries = CookieJar.publicSuffixes.union(parents).union(boundaries.map(CookieJar.canonical))
    }

    private init() {
        wildcardParents = nil
        boundaries = CookieJar.publicSuffixes
    }

    /// A browser's rules only: public suffixes are boundaries, any wider domain of the host is fine.
    public static let browser = CookieDomainPolicy()

    /// Whether no cookie may be set on `domain` (a cookie from that very host becomes host-only instead).
    public func isBoundary(_ domain: String) -> Bool {
        !domain.contains(".") || boundaries.contains(domain)
    }

    /// Whether `host` may set a cookie for `domain`, which domain-matches it and is no boundary.
    public func allows(domain: String, setBy host: String) -> Bool {
        guard domain != host, let wildcardParents else { return true }
        guard let parent = wildcardParents.first(where: { host.hasSuffix("." + $0) }) else { return false }  // listed exactly
        return domain.hasSuffix("." + parent)
    }
}
