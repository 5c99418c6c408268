import Foundation
import GatehouseCore
import HTTPTypes
import Hummingbird

/// `GET /auth/verify`: Gatehouse as the forward-auth backend of an organization's own ingress (nginx `auth_request`,
/// Caddy `forward_auth`, Traefik `forwardAuth`) in front of an external app (`apps[].mount: "external"`). The ingress
/// asks with the member's cookies and says which request it is holding; the answer is `200` with the headers to
/// copy to the app (identity, the signed assertion), `401` without a session (with the sign-in URL that brings the
/// member back, in `Location`, or as a redirect when asked with `?redirect=1` for ingresses that pass the answer on),
/// `403` when the app's rules or requirements refuse.
struct ForwardAuthController: Sendable {
    let catalog: AppCatalog
    let access: AppAccess
    let clientAddresses: ClientAddressResolver
    let publicOrigin: String

    func addRoutes(to router: RouterGroup<GatewayRequestContext>) {
        router.get(RouterPath(stringLiteral: Paths.forwardAuth)) { request, context in try verify(request, context: context) }
        router.head(RouterPath(stringLiteral: Paths.forwardAuth)) { request, context in try verify(request, context: context) }
    }

    /// The request the ingress holds, as it says: `X-Original-URL` (with `X-Original-Method`), or Caddy's and
    /// Traefik's `X-Forwarded-Proto`, `-Host`, `-Uri` and `-Method`.
    struct Original {
        let url: URL
        let method: String

        init?(_ headers: HTTPFields) {
            func field(_ name: String) -> String? { headers[HTTPField.Name(name)!] }
            let text: String
            if let original = field("X-Original-URL") {
                text = original
            } else if let proto = field("X-Forwarded-Proto"), let host = field("X-Forwarded-Host") {
                text = proto + "://" + host + (field("X-Forwarded-Uri") ?? "/")
            } else {
                return nil
            }
            guard let url = URL(string: text), url.host != nil, ["http", "https"].contains(url.scheme?.lowercased() ?? "") else { return nil }
            self.url = url
            method = (field("X-Forwarded-Method") ?? field("X-Original-Method") ?? "GET").uppercased()
        }

        /// The path and query the member asked for.
        var pathAndQuery: String {
            let path = url.path(percentEncoded: true)
            return (path.isEmpty ? "/" : path) + (url.query(percentEncoded: true).map { "?" + $0 } ?? "")
        }
    }

    func verify(_ request: Request, context: GatewayRequestContext) throws -> Response {
        // Only a trusted proxy may say which request it holds: anyone else could name any app and path.
        guard let peer = context.peerAddress.flatMap(IPAddress.init), clientAddresses.isTrusted(peer) else {
            throw ForwardAuthError.untrustedCaller
        }
        guard let original = Original(request.headers) else { throw ForwardAuthError.noOriginalRequest }
        let origin = AppCatalog.origin(original.url)
        guard let app = catalog.externalApp(origin: origin) else { throw ForwardAuthError.unknownHost }
        let back = origin + original.pathAndQuery
        let redirect = request.uri.queryParameters.get("redirect") == "1"
        guard let session = context.session else {
            let signIn = FormEncoding.url(publicOrigin + Paths.signIn, adding: [("return_to", back)])
            return Response(
                status: redirect ? .found : .unauthorized, headers: [.location: signIn, .cacheControl: "no-store"],
                body: .init(byteBuffer: ByteBuffer(string: redirect ? "" : "sign-in required\n")))
        }
        let moment = AccessMoment(client: context.clientAddress.flatMap(IPAddress.init), idle: context.sessionIdle)
        do {
            var headers = try access.verify(app, path: original.pathAndQuery, method: original.method, session: session, moment: moment, returnTo: back)
            headers[.cacheControl] = "no-store"
            return Response(status: .ok, headers: headers)
        } catch let error as AccessError {
            // The ingress sends the member where a signed-out one goes: to prove themselves again, and back.
            guard let url = error.stepUpURL else { throw error }
            return Response(
                status: redirect ? .found : .unauthorized, headers: [.location: url, .cacheControl: "no-store"],
                body: .init(byteBuffer: ByteBuffer(string: redirect ? "" : "\(error.reason)\n")))
        }
    }
}

/// Why `/auth/verify` cannot answer for a request.
enum ForwardAuthError: PresentableError {
    case untrustedCaller
    case noOriginalRequest
    case unknownHost

    var status: HTTPResponse.Status {
        switch self {
        case .untrustedCaller, .unknownHost: .forbidden
        case .noOriginalRequest: .badRequest
        }
    }

    var reason: String {
        switch self {
        case .untrustedCaller: "forward_auth_untrusted_caller"
        case .noOriginalRequest: "forward_auth_no_original_request"
        case .unknownHost: "forward_auth_unknown_host"
        }
    }

    var messageKey: String { "error_forward_auth" }
    var isRefusal: Bool { self == .untrustedCaller }
}
