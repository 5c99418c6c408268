import Foundation

/// One cookie in a member's server-side jar (RFC 6265 §5.3 storage model).
public struct JarCookie: Sendable, Codable, Equatable {
    public var name: String
    public var value: String
    /// Lower-case, without a leading dot.
    public var domain: String
    public var path: String
    public var hostOnly: Bool
    public var secure: Bool
    public var httpOnly: Bool
    /// `nil` for a session cookie: it lives as long as the member's gateway session.
    public var expiresAt: Date?
    public var createdAt: Date
    public var lastAccessAt: Date

    public func isExpired(at now: Date) -> Bool {
        expiresAt.map { $0 <= now } ?? false
    }
}

/// Where a cookie is set from or sent to: the upstream URL as the gateway requests it.
public struct CookieOrigin: Sendable, Equatable {
    public var host: String
    public var path: String
    public var isSecure: Bool

    public init(host: String, path: String, isSecure: Bool) {
        self.host = CookieJar.canonical(host)
        self.path = path.isEmpty ? "/" : path
        self.isSecure = isSecure
    }

    /// An https URL, or plain http to a loopback host (browsers treat those as secure contexts too).
    public init?(url: URL) {
        guard let host = url.host, let scheme = url.scheme?.lowercased() else { return nil }
        let loopback = host == "localhost" || host.hasPrefix("127.") || host == "::1" || host == "[::1]"
        self.init(host: host, path: url.path(percentEncoded: true), isSecure: scheme == "https" || (scheme == "http" && loopback))
    }
}
