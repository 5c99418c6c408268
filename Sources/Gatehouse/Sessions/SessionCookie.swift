/// `Set-Cookie` values for the gateway's own cookies: always `HttpOnly`, `SameSite=Lax` and `Path=/`, `Secure` when
/// the gateway is served over https.
public struct SessionCookie: Sendable, Equatable {
    public let name: String
    public let isSecure: Bool
    /// `Domain`, for the session cookie when external apps' hosts must see it too.
    public let domain: String?

    public init(name: String, isSecure: Bool, domain: String? = nil) {
        self.name = name
        self.isSecure = isSecure
        self.domain = domain
    }

    /// The browser-binding cookie of a sign-in in progress.
    public var loginCookie: SessionCookie { SessionCookie(name: name + "_login", isSecure: isSecure) }

    /// A session cookie lives as long as the browser session; the server decides when it ends.
    public func setting(_ value: String, maxAge: Int? = nil) -> String {
        var parts = ["\(name)=\(value)", "Path=/", "HttpOnly", "SameSite=Lax"]
        if let maxAge { parts.append("Max-Age=\(maxAge)") }
        if let domain { parts.append("Domain=\(domain)") }
        if isSecure { parts.append("Secure") }
        return parts.joined(separator: "; ")
    }

    public func clearing() -> String {
        setting("", maxAge: 0)
    }
}
