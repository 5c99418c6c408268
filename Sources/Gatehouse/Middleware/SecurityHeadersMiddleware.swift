import HTTPTypes
import Hummingbird

/// Headers for every page the gateway renders itself: a strict Content-Security-Policy with no inline code, no
/// framing, no sniffing, no referrer leaks. Forms may only go to the gateway and to the identity provider (Chrome
/// applies `form-action` to the redirect after a form too).
public struct SecurityHeadersMiddleware<Context: RequestContext>: RouterMiddleware {
    let contentSecurityPolicy: String
    let isHTTPS: Bool

    public init(identityProviderOrigin: String?, isHTTPS: Bool) {
        let formTargets = ["'self'", identityProviderOrigin].compactMap { $0 }.joined(separator: " ")
        self.contentSecurityPolicy =
            "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'; "
            + "base-uri 'none'; frame-ancestors 'none'; form-action \(formTargets)"
        self.isHTTPS = isHTTPS
    }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response = try await next(request, context)
        func setIfAbsent(_ name: HTTPField.Name, _ value: String) {
            if response.headers[name] == nil { response.headers[name] = value }
        }
        setIfAbsent(.contentSecurityPolicy, contentSecurityPolicy)
        setIfAbsent(.xContentTypeOptions, "nosniff")
        setIfAbsent(HTTPField.Name("Referrer-Policy")!, "same-origin")
        setIfAbsent(HTTPField.Name("X-Frame-Options")!, "DENY")
        if isHTTPS { setIfAbsent(.strictTransportSecurity, "max-age=31536000") }
        return response
    }
}
