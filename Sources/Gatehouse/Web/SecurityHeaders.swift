import GatehouseCore
import HTTPTypes

/// The headers every answer of the gateway carries unless it has its own (apps' answers have their own: `AnswerMapping`):
/// a strict Content-Security-Policy with no inline code, no framing, no sniffing, no referrer leaks, a browsing context
/// group of their own, no powerful features. Forms may only go to the gateway, the identity providers and the app
/// hosts (Chrome applies `form-action` to the redirects after a form too: sign-out's).
struct SecurityHeaders: Sendable {
    /// The fields, made once: every answer gets them.
    private let fields: [HTTPField]

    /// `appHosts`: the source of every app host (`https://*.apps.example.org`), when apps have hosts of their own:
    /// sign-out passes through them after its form.
    init(identityProviderOrigins: [String], isHTTPS: Bool, appHosts: String? = nil) {
        var formTargets = ["'self'"]
        for origin in identityProviderOrigins + [appHosts].compactMap({ $0 }) where !formTargets.contains(origin) { formTargets.append(origin) }
        let contentSecurityPolicy =
            "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'; "
            + "base-uri 'none'; frame-ancestors 'none'; form-action \(formTargets.joined(separator: " "))"
        fields =
            [
                HTTPField(name: .contentSecurityPolicy, value: contentSecurityPolicy), HTTPField(name: .xContentTypeOptions, value: "nosniff"),
                HTTPField(name: Self.referrerPolicy, value: "same-origin"), HTTPField(name: Self.frameOptions, value: "DENY"),
                // A window an app's script opens on a gateway page gets no reference to it (apps' pages never carry
                // this value: `AnswerMapping`), and the gateway's pages use no camera, microphone or the like.
                HTTPField(name: Self.openerPolicy, value: "same-origin"),
                HTTPField(name: Self.permissionsPolicy, value: PermissionsPolicy.header(allowing: [])),
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
    static let openerPolicy = HTTPField.Name("Cross-Origin-Opener-Policy")!
    static let clearSiteData = HTTPField.Name("Clear-Site-Data")!

    /// What a browser forgets when its member's session ends: the HTTP cache, the cookies of the site (the gateway's
    /// and its app hosts' under the same registrable domain), and every app's storage (`localStorage`, IndexedDB,
    /// caches, service workers: on the gateway's origin for path mounts). A shared computer keeps nothing for the
    /// next person. (No `executionContexts`: no browser takes it any more, and Chromium logs it as unknown.)
    static let signedOut = HTTPField(name: clearSiteData, value: #""cache", "cookies", "storage""#)
    static let permissionsPolicy = HTTPField.Name("Permissions-Policy")!
}
