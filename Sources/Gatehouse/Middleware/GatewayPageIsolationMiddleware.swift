import Foundation
import GatehouseCore
import HTTPTypes
import Hummingbird

/// The gateway's own pages and answers (sign-in, portal, account, sessions, upgrade, operator console) out of reach of
/// the scripts of apps on path mounts, which run on the gateway's origin: a browser that says what a request is for
/// (`Sec-Fetch-Mode`, `Sec-Fetch-Dest`, sent by every current browser) gets a gateway page only as a navigation of a
/// top-level document. A script's `fetch` or `XMLHttpRequest`, a frame, an image or a script tag is refused, so no
/// page, CSRF token or JSON answer of the gateway's can be read by an app's script; a window it opens is cut off by the
/// pages' `Cross-Origin-Opener-Policy: same-origin` (`SecurityHeaders`), and apps' pages never carry that value
/// (`AnswerMapping`), so the two never share a browsing context group.
///
/// The gateway's own scripts that ask for data (the upgrade flow's live username check) send the page's CSRF token in
/// `X-Gatehouse-CSRF`, which the handler compares with the session's: an app's script cannot read the page that holds
/// it. A form posted from an app's page to a gateway address (its `Referer` is an app's) is refused too.
///
/// Left out: app paths, the gateway's static files, health, the published assertion keys, the back-channel logout and
/// forward-auth (called by servers), and the bar's own endpoint, which only takes the member's bar choices and answers
/// nothing.
struct GatewayPageIsolationMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if let refusal = GatewayPageIsolation.refusal(method: request.method, path: request.uri.path, headers: request.headers) {
            throw RequestError.forbidden(refusal)
        }
        return try await next(request, context)
    }
}

/// What `GatewayPageIsolationMiddleware` decides.
enum GatewayPageIsolation {
    static let fetchMode = HTTPField.Name("Sec-Fetch-Mode")!
    static let fetchDest = HTTPField.Name("Sec-Fetch-Dest")!
    static let pageToken = HTTPField.Name("X-Gatehouse-CSRF")!

    /// Why a request for `path` is refused, or `nil`.
    static func refusal(method: HTTPRequest.Method, path: String, headers: HTTPFields) -> String? {
        guard isGatewayPage(path) else { return nil }
        // A client that does not say (a server, a script outside a browser, an old browser) is judged by the usual
        // checks alone: it holds no member's cookies in a page of an app's.
        guard let mode = headers[fetchMode] else { return nil }
        let destination = headers[fetchDest] ?? ""
        if mode == "navigate" && destination == "document" {
            if method == .post, let referer = headers[.referer], Self.isAppPage(referer) {
                return "gateway form posted from an app's page"
            }
            return nil
        }
        if headers[pageToken] != nil && scriptedPaths.contains(path) { return nil }
        return "gateway page asked for as \(destination.isEmpty ? mode : destination), not as a navigation"
    }

    /// The paths the gateway's own scripts ask for data (with `X-Gatehouse-CSRF`, which their handler checks).
    static let scriptedPaths: Set<String> = [Paths.upgradeUsernameCheck]

    /// Whether `path` is one of the gateway's own pages or answers, as opposed to an app's, a static file or an
    /// endpoint for servers.
    static func isGatewayPage(_ path: String) -> Bool {
        switch RouteClass.of(path: path) {
        case .proxy, .static, .health: return false
        case .portal, .signIn, .upgrade, .operator, .development, .other:
            return !serverEndpoints.contains(path)
        }
    }

    static let serverEndpoints: Set<String> = [Paths.backChannelLogout, Paths.forwardAuth, Paths.assertionKeys, Paths.frame, "/metrics"]

    /// Whether a `Referer` names a page of a path-mounted app (on any origin: the referrer policy may shorten it).
    static func isAppPage(_ referer: String) -> Bool {
        guard let path = URLComponents(string: referer)?.path else { return false }
        return RouteClass.of(path: path) == .proxy
    }
}
