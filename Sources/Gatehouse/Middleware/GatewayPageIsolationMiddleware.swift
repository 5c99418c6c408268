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
/// The gateway's own scripts that ask for data (the upgrade flow's live username check, the chat's history, sending
/// and reading) send the page's CSRF token in `X-Gatehouse-CSRF` (the chat's event stream, in its query), which the
/// handler compares with the session's: an app's script cannot read the page that holds it. A form posted from an app's page to a gateway address (its `Referer` is an app's) is refused too.
///
/// Left out: app paths, the gateway's static files, health, the published assertion keys, the back-channel logout and
/// forward-auth (called by servers), and the bar's own endpoints, which take the member's bar choices and answer the
/// unread count the bar shows on the app's page anyway.
struct GatewayPageIsolationMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if let refusal = GatewayPageIsolation.refusal(
            method: request.method, path: request.uri.path, headers: request.headers,
            queryToken: request.uri.queryParameters.get("csrf") != nil)
        {
            throw RequestError.forbidden(refusal)
        }
        return try await next(request, context)
    }
}
