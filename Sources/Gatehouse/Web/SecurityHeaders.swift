import HTTPTypes

/// The headers every answer of the gateway carries unless it has its own: a strict Content-Security-Policy with no
/// inline code, no framing, no sniffing, no referrer leaks. Forms may only go to the gateway and to the identity
/// provider (Chrome applies `form-action` to the redirect after a form too).
struct SecurityHeaders: Sendable {
    let contentSecurityPolicy: String
    let isHTTPS: Bool

    init(identityProviderOrigin: String?, isHTTPS: Bool) {
        let formTargets = ["'self'", identityProviderOrigin].compactMap { $0 }.joined(separator: " ")
        self.contentSecurityPolicy =
            "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'; "
            + "base-uri 'none'; frame-ancestors 'none'; form-action \(formTargets)"
        self.isHTTPS = isHTTPS
    }

    func apply(to headers: inout HTTPFields) {
        func setIfAbsent(_ name: HTTPField.Name, _ value: String) {
            if headers[name] == nil { headers[name] = value }
        }
        setIfAbsent(.contentSecurityPolicy, contentSecurityPolicy)
        setIfAbsent(.xContentTypeOptions, "nosniff")
        setIfAbsent(Self.referrerPolicy, "same-origin")
        setIfAbsent(Self.frameOptions, "DENY")
        if isHTTPS { setIfAbsent(.strictTransportSecurity, "max-age=31536000") }
    }

    static let referrerPolicy = HTTPField.Name("Referrer-Policy")!
    static let frameOptions = HTTPField.Name("X-Frame-Options")!
}
