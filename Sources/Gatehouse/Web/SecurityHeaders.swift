import HTTPTypes

/// The headers every answer of the gateway carries unless it has its own: a strict Content-Security-Policy with no
/// inline code, no framing, no sniffing, no referrer leaks. Forms may only go to the gateway and to the identity
/// provider (Chrome applies `form-action` to the redirect after a form too).
struct SecurityHeaders: Sendable {
    /// The fields, made once: every answer gets them.
    private let fields: [HTTPField]

    init(identityProviderOrigin: String?, isHTTPS: Bool) {
        let formTargets = ["'self'", identityProviderOrigin].compactMap { $0 }.joined(separator: " ")
        let contentSecurityPolicy =
            "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'; "
            + "base-uri 'none'; frame-ancestors 'none'; form-action \(formTargets)"
        fields =
            [
                HTTPField(name: .contentSecurityPolicy, value: contentSecurityPolicy), HTTPField(name: .xContentTypeOptions, value: "nosniff"),
                HTTPField(name: Self.referrerPolicy, value: "same-origin"), HTTPField(name: Self.frameOptions, value: "DENY"),
            ] + (isHTTPS ? [HTTPField(name: .strictTransportSecurity, value: "max-age=31536000")] : [])
    }

    /// Each field the answer does not carry already, appended (one look at the answer's fields, not one per name).
    func apply(to headers: inout HTTPFields) {
        var present = [Bool](repeating: false, count: fields.count)
        for field in headers {
            if let index = fields.firstIndex(where: { $0.name == field.name }) { present[index] = true }
        }
        for (index, field) in fields.enumerated() where !present[index] { headers.append(field) }
    }

    static let referrerPolicy = HTTPField.Name("Referrer-Policy")!
    static let frameOptions = HTTPField.Name("X-Frame-Options")!
}
