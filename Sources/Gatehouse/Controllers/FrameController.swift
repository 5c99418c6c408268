import GatehouseCore
import GatehouseStorage
import HTTPTypes
import Hummingbird

/// `POST /__gatehouse/frame` (on the gateway's host and on every app host): the bar's script keeps the member's
/// choices in the session — the bar folded (`bar=collapsed|expanded`), the banner dismissed (`banner=dismissed`,
/// counted as `upgrade_banner_dismissed`). Only the bar's own script can ask: it sends a header that no form can and
/// that another site's script could only with CORS, which the gateway never grants; a browser that names the
/// request's site must name the page's own.
public struct FrameController: Sendable {
    let sessions: any SessionStore
    let events: EventRecorder

    static let header = HTTPField.Name("X-Gatehouse-Frame")!
    static let fetchSite = HTTPField.Name("Sec-Fetch-Site")!
    /// More than any set of choices needs.
    static let bodyLimit = 256

    public init(sessions: any SessionStore, events: EventRecorder) {
        self.sessions = sessions
        self.events = events
    }

    public func addRoutes(to group: RouterGroup<SignedInRequestContext>) {
        group.post(RouterPath(stringLiteral: Paths.frame)) { request, context in try await self.change(request, session: context.session) }
        group.get(RouterPath(stringLiteral: Paths.frame)) { request, context in try self.state(request, session: context.session) }
    }

    /// What the bar of a page shown again asks (a tab coming back into view, on an app host that other tabs' news does
    /// not reach): the member's level now, to compare with the level its markup was made for.
    func state(_ request: Request, session: Session) throws -> Response {
        guard request.headers[Self.header] == "1" else { throw RequestError.forbidden("frame state without the bar's header") }
        return try JSONResponse.make(["level": session.level.rawValue])
    }

    func change(_ request: Request, session: Session) async throws -> Response {
        guard request.headers[Self.header] == "1" else { throw RequestError.forbidden("frame change without the bar's header") }
        if let site = request.headers[Self.fetchSite], site != "same-origin" {
            throw RequestError.forbidden("frame change from a \(site == "same-site" ? "same-site" : "cross-site") page")
        }
        let form = FormEncoding.decode(String(buffer: try await request.body.collect(upTo: Self.bodyLimit)))
        var change = FramePreferences()
        for (field, value) in form {
            switch (field, value) {
            case ("bar", "collapsed"): change.barCollapsed = true
            case ("bar", "expanded"): change.barCollapsed = false
            case ("banner", "dismissed"): change.bannerDismissed = true
            default: throw RequestError.badRequest("unknown frame choice")
            }
        }
        guard change != FramePreferences() else { throw RequestError.badRequest("no frame choice") }
        try await sessions.setFrame(change, sessionID: session.id)
        if change.bannerDismissed == true, session.frame?.bannerDismissed != true, session.level == .sso {
            events.record(.upgradeBannerDismissed, sub: session.identity.sub)
        }
        return Response(status: .noContent, headers: [.cacheControl: "no-store"])
    }
}
