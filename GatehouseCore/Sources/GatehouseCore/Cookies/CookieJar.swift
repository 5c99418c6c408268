import Foundation

/// A member's server-side cookie jar with a browser's semantics (RFC 6265 §5): shared by every app the member opens
/// through the gateway, never seen by the browser.
public struct CookieJar: Sendable, Codable, Equatable {
    public enum Outcome: Equatable, Sendable {
        case stored
        case deleted
        case rejected(String)
    }

    public private(set) var cookies: [JarCookie] = []

    /// Limits from RFC 6265 §6.1 (at least 4096 bytes a cookie, 50 a domain, 3000 in all), kept tighter in total
    /// because a jar belongs to one member.
    public static let maximumCookieBytes = 4096
    public static let maximumPerDomain = 50
    public static let maximumTotal = 300

    /// Suffixes under which every label belongs to a different owner; a cookie for one of them would reach
    /// strangers. Bare top-level domains are refused by the dot rule; these are the common two-label ones.
    static let publicSuffixes: Set<String> = [
        "co.uk", "org.uk", "ac.uk", "gov.uk", "com.au", "net.au", "org.au", "co.nz", "co.jp", "com.br", "com.cn", "co.in",
        "github.io", "herokuapp.com", "appspot.com", "cloudfront.net", "azurewebsites.net", "blogspot.com", "vercel.app",
        "netlify.app", "pages.dev", "workers.dev",
    ]

    public init() {}

    static func canonical(_ host: String) -> String {
        var host = host.lowercased()
        if host.hasSuffix(".") { host.removeLast() }
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return host
    }

    static func isIPAddress(_ host: String) -> Bool {
        host.contains(":") || (host.split(separator: ".").count == 4 && host.allSatisfy { $0.isNumber || $0 == "." })
    }

    /// RFC 6265 §5.1.3.
    public static func domainMatches(_ host: String, _ domain: String) -> Bool {
        host == domain || (host.hasSuffix("." + domain) && !isIPAddress(host))
    }

    /// RFC 6265 §5.1.4.
    public static func pathMatches(_ requestPath: String, _ cookiePath: String) -> Bool {
        if requestPath == cookiePath { return true }
        guard requestPath.hasPrefix(cookiePath) else { return false }
        return cookiePath.hasSuffix("/") || requestPath.dropFirst(cookiePath.count).first == "/"
    }

    /// RFC 6265 §5.1.4: the directory of the request path.
    public static func defaultPath(_ requestPath: String) -> String {
        let path = requestPath.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0]
        guard path.hasPrefix("/"), let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return "/" }
        return String(path[..<slash])
    }

    /// Stores (or deletes, or refuses) what one `Set-Cookie` header says, as a browser would for `origin`, with
    /// `domains` deciding which `Domain` attributes the origin may use.
    @discardableResult
    public mutating func store(
        setCookie header: String, from origin: CookieOrigin, domains: CookieDomainPolicy = .browser, now: Date = Date()
    ) -> Outcome {
        let sections = header.split(separator: ";", omittingEmptySubsequences: false).map(String.init)
        guard let pair = sections.first, let equals = pair.firstIndex(of: "=") else { return .rejected("no name=value") }
        let name = pair[..<equals].trimmingCharacters(in: .whitespaces)
        let value = pair[pair.index(after: equals)...].trimmingCharacters(in: .whitespaces)
        guard !name.isEmpty else { return .rejected("empty name") }
        guard name.utf8.count + value.utf8.count <= Self.maximumCookieBytes else { return .rejected("too large") }
        guard !(name + value).unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            return .rejected("control characters")
        }

        var expiresAt: Date?
        var maxAgeSeen = false
        var domainAttribute = ""
        var path: String?
        var secure = false
        var httpOnly = false
        for attribute in sections.dropFirst() {
            let parts = attribute.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = parts[0].trimmingCharacters(in: .whitespaces).lowercased()
            let argument = parts.count > 1 ? parts[1].trimmingCharacters(in: .whitespaces) : ""
            switch key {
            case "expires":
                if !maxAgeSeen, let date = CookieDate.parse(argument) { expiresAt = date }
            case "max-age":
                let digits = argument.hasPrefix("-") ? argument.dropFirst() : Substring(argument)
                guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }) else { continue }
                let seconds = Int(argument) ?? (argument.hasPrefix("-") ? Int.min : Int.max)
                maxAgeSeen = true
                expiresAt = seconds <= 0 ? .distantPast : now.addingTimeInterval(TimeInterval(min(seconds, 400 * 86400)))
            case "domain":
                var domain = argument
                if domain.hasPrefix(".") { domain.removeFirst() }
                if !domain.isEmpty { domainAttribute = Self.canonical(domain) }
            case "path":
                path = argument.hasPrefix("/") ? argument : nil
            case "secure":
                secure = true
            case "httponly":
                httpOnly = true
            default:
                continue
            }
        }

        let hostOnly: Bool
        let domain: String
        if domainAttribute.isEmpty {
            (hostOnly, domain) = (true, origin.host)
        } else if domains.isBoundary(domainAttribute) {
            guard domainAttribute == origin.host else { return .rejected("public suffix or boundary \(domainAttribute)") }
            (hostOnly, domain) = (true, origin.host)
        } else {
            guard Self.domainMatches(origin.host, domainAttribute) else { return .rejected("domain \(domainAttribute) is not \(origin.host)'s") }
            guard domains.allows(domain: domainAttribute, setBy: origin.host) else {
                return .rejected("domain \(domainAttribute) is wider than the allowlist entry admitting \(origin.host)")
            }
            (hostOnly, domain) = (false, domainAttribute)
        }
        if secure && !origin.isSecure { return .rejected("Secure cookie from an insecure origin") }
        // A cookie from an insecure origin may not overwrite a secure one (RFC 6265bis §5.7 step 16).
        let cookiePath = path ?? Self.defaultPath(origin.path)
        if !origin.isSecure, cookies.contains(where: { $0.secure && $0.name == name && Self.domainMatches(domain, $0.domain) }) {
            return .rejected("would overwrite a Secure cookie")
        }

        let existing = cookies.firstIndex { $0.name == name && $0.domain == domain && $0.path == cookiePath }
        let createdAt = existing.map { cookies[$0].createdAt } ?? now
        if let existing { cookies.remove(at: existing) }
        let cookie = JarCookie(
            name: name, value: value, domain: domain, path: cookiePath, hostOnly: hostOnly, secure: secure, httpOnly: httpOnly,
            expiresAt: expiresAt, createdAt: createdAt, lastAccessAt: now
        )
        if cookie.isExpired(at: now) { return existing == nil ? .rejected("already expired") : .deleted }
        cookies.append(cookie)
        enforceLimits(keeping: cookie, now: now)
        return .stored
    }

    /// The cookies to send to `origin`, longest path first, then oldest first (RFC 6265 §5.4); expired ones go.
    public mutating func cookies(for origin: CookieOrigin, now: Date = Date()) -> [JarCookie] {
        cookies.removeAll { $0.isExpired(at: now) }
        // Reading does not touch `lastAccessAt` (it is the time the cookie was last set): a request that only
        // reads the jar never has to write it back.
        let matching = cookies.filter { cookie in
            let domainOK = cookie.hostOnly ? origin.host == cookie.domain : Self.domainMatches(origin.host, cookie.domain)
            return domainOK && Self.pathMatches(origin.path, cookie.path) && (!cookie.secure || origin.isSecure)
        }
        return matching.sorted { ($0.path.count, $1.createdAt) > ($1.path.count, $0.createdAt) }
    }

    /// The `Cookie` header value for `origin`, or `nil` when nothing matches.
    public mutating func cookieHeader(for origin: CookieOrigin, now: Date = Date()) -> String? {
        let matching = cookies(for: origin, now: now)
        return matching.isEmpty ? nil : matching.map { "\($0.name)=\($0.value)" }.joined(separator: "; ")
    }

    /// Evicts expired cookies, then the least recently used beyond the per-domain and total limits.
    mutating func enforceLimits(keeping kept: JarCookie, now: Date) {
        cookies.removeAll { $0.isExpired(at: now) }
        let sameDomain = cookies.filter { $0.domain == kept.domain }
        if sameDomain.count > Self.maximumPerDomain, let victim = sameDomain.filter({ $0 != kept }).min(by: { $0.lastAccessAt < $1.lastAccessAt }) {
            cookies.removeAll { $0 == victim }
        }
        while cookies.count > Self.maximumTotal, let victim = cookies.filter({ $0 != kept }).min(by: { $0.lastAccessAt < $1.lastAccessAt }) {
            cookies.removeAll { $0 == victim }
        }
    }
}
