import Foundation
import GatehouseCore
import HTTPTypes
import Hummingbird

/// What `GatewayPageIsolationMiddleware` decides.
enum GatewayPageIsolation {
    static let fetchMode = HTTPField.Name("Sec-Fetch-Mode")!
    static let fetchDest = HTTPField.Name("Sec-Fetch-Dest")!
    static let pageToken = HTTPField.Name("X-Gatehouse-CSRF")!

    /// Why a request for `path` is refused, or `nil`. `queryToken`: whether the query carries a page token (`csrf`),
    /// as the chat's event stream must (an `EventSource` sends no header of its own).
    static func refusal(method: HTTPRequest.Method, path: String, headers: HTTPFields, queryToken: Bool = false) -> String? {
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
        if queryToken && (path == Paths.chatEvents || path == Paths.callEvents) { return nil }
        return "gateway page asked for as \(destination.isEmpty ? mode : destination), not as a navigation"
    }

    /// The page token a gateway script sent (`X-Gatehouse-CSRF`, or `csrf` in the query of an event stream), which
    /// must be the session's. None is refused as a wrong one is, whatever fetch metadata says or leaves out: a
    /// browser that sends no `Sec-Fetch-*` (or a client with the member's cookie alone) gets nothing either.
    static func checkPageToken(_ request: Request, session: Session) throws {
        guard let token = request.headers[pageToken] ?? request.uri.queryParameters.get("csrf") else {
            throw RequestError.forbidden("\(request.uri.path) without the page's token")
        }
        guard constantTimeEquals(token, session.csrfToken) else { throw RequestError.forbidden("\(request.uri.path) with another page's token") }
    }

    /// The paths the gateway's own scripts ask for data (with `X-Gatehouse-CSRF`, which their handler checks; a form
    /// posted by a script carries the session's token in its body as every form does).
    static let scriptedPaths: Set<String> = [
        Paths.upgradeUsernameCheck, Paths.chatHistory, Paths.chatEvents, Paths.chatNotice, Paths.chatSend, Paths.chatEdit, Paths.chatDelete, Paths.chatRead,
        Paths.chatReact, Paths.chatTyping, Paths.chatManage, Paths.chatPush, Paths.callServers, Paths.callSignal, Paths.callEvents, Paths.storySeen,
    ]

    /// Whether `path` is one of the gateway's own pages or answers, as opposed to an app's, a static file or an
    /// endpoint for servers.
    static func isGatewayPage(_ path: String) -> Bool {
        switch RouteClass.of(path: path) {
        case .proxy, .static, .health: return false
        case .portal, .signIn, .upgrade, .operator, .development, .other:
            return !serverEndpoints.contains(path)
        }
    }

    /// Endpoints for servers, and the bar's own two: its choices, and the unread count it shows on every app's page
    /// anyway.
    static let serverEndpoints: Set<String> = [
        Paths.backChannelLogout, Paths.forwardAuth, Paths.assertionKeys, Paths.frame, Paths.chatUnread, Paths.live, "/metrics",
    ]

    /// Whether a `Referer` names a page of a path-mounted app (on any origin: the referrer policy may shorten it).
    static func isAppPage(_ referer: String) -> Bool {
        guard let path = URLComponents(string: referer)?.path else { return false }
        return RouteClass.of(path: path) == .proxy
    }
}
