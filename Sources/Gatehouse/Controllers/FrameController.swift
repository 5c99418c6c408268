import Foundation
import GatehouseCore
import GatehouseStorage
import HTTPTypes
import Hummingbird
import Logging

/// `POST /__gatehouse/frame` (on the gateway's host and on every app host): the bar's script keeps the member's
/// choices in the session — the bar folded (`bar=collapsed|expanded`), the banner dismissed (`banner=dismissed`,
/// counted as `upgrade_banner_dismissed`). Only the bar's own script can ask: it sends a header that no form can and
/// that another site's script could only with CORS, which the gateway never grants; a browser that names the
/// request's site must name the page's own.
public struct FrameController: Sendable {
    let sessions: any SessionStore
    let events: EventRecorder
    /// The session's limits, for the warning before it ends and for staying signed in.
    let configuration: SessionConfiguration
    /// A refresh at the provider, which lets a member stay past the absolute limit while the provider's session lasts.
    let refresher: TokenRefresher?
    /// Where a member whose provider will not refresh signs in again (in a new tab).
    let publicOrigin: String
    /// The warning's texts, in the request's language.
    let languages: Languages?

    static let header = GatewayBar.scriptHeader
    static let fetchSite = HTTPField.Name("Sec-Fetch-Site")!
    /// More than any set of choices needs.
    static let bodyLimit = 256

    public init(
        sessions: any SessionStore, events: EventRecorder, configuration: SessionConfiguration = .init(), refresher: TokenRefresher? = nil,
        publicOrigin: String = "", languages: Languages? = nil
    ) {
        self.languages = languages
        self.sessions = sessions
        self.events = events
        self.configuration = configuration
        self.refresher = refresher
        self.publicOrigin = publicOrigin
    }

    public func addRoutes(to group: RouterGroup<SignedInRequestContext>) {
        group.post(RouterPath(stringLiteral: Paths.frame)) { request, context in
            try await self.change(request, session: context.session, logger: context.logger)
        }
        group.get(RouterPath(stringLiteral: Paths.frame)) { request, context in try self.state(request, session: context.session) }
    }

    /// What the bar of a page shown again asks (a tab coming back into view, on an app host that other tabs' news does
    /// not reach): the member's level now, to compare with the level its markup was made for; and what a page's
    /// warning before the session ends asks: how long until the idle limit (the member's last activity in any app, as
    /// recorded) and the absolute one. Asking is no activity (`SessionMiddleware` leaves last-seen alone).
    func state(_ request: Request, session: Session) throws -> Response {
        guard request.headers[Self.header] == "1" else { throw RequestError.forbidden("frame state without the bar's header") }
        return try JSONResponse.make(["level": session.level.rawValue, "session": remaining(session), "texts": texts])
    }

    /// What the warning before the session ends says, in the member's language: sent with the state its script asks
    /// for, so that no page carries them until they are needed.
    var texts: [String: String] {
        guard let strings = languages?.strings else { return [:] }
        return [
            "warning": strings["session_warning"], "ended": strings["session_ended"], "stay": strings["session_stay"],
            "newTab": strings["session_new_tab"], "signIn": strings["session_sign_in"],
        ]
    }

    /// Seconds until `session`'s idle and absolute limits, by the gateway's clock (the page's may differ).
    func remaining(_ session: Session, now: Date = Date()) -> [String: Int] {
        let idleEnds = session.lastSeenAt.addingTimeInterval(TimeInterval(configuration.idleTimeoutSeconds))
        return [
            "idleEndsIn": max(0, Int(idleEnds.timeIntervalSince(now))), "endsIn": max(0, Int(session.expiresAt.timeIntervalSince(now))),
            "warnBefore": configuration.warningSeconds,
        ]
    }

    /// "Stay signed in": the member is active now. Near the absolute limit, a refresh at the provider (whose session
    /// must still be alive) carries the session a whole lifetime further; when the provider will not, the answer names
    /// the sign-in that will (the page opens it in a new tab, which comes back to `Paths.sessionRenewed`).
    func stay(_ session: Session, logger: Logger) async throws -> Response {
        var session = session
        let now = Date()
        if session.expiresAt.timeIntervalSince(now) <= TimeInterval(configuration.warningSeconds) {
            do {
                guard let refresher, session.tokens.refreshToken != nil else { throw OIDCError.refreshFailed("no refresh token") }
                session = try await refresher.refreshed(session, evenIfFresh: true)
                session.expiresAt = now.addingTimeInterval(TimeInterval(configuration.absoluteTimeoutSeconds))
            } catch {
                logger.info("staying signed in needs a sign-in", metadata: ["reason": .string("\(error)")])
                let signIn = publicOrigin + FormEncoding.url(Paths.signInStart, adding: [("return_to", Paths.sessionRenewed), ("max_age", "0")])
                return try JSONResponse.make(["signIn": signIn, "session": remaining(session, now: now)])
            }
        }
        session.lastSeenAt = now
        try await sessions.update(session)
        return try JSONResponse.make(["session": remaining(session, now: now)])
    }

    func change(_ request: Request, session: Session, logger: Logger) async throws -> Response {
        guard request.headers[Self.header] == "1" else { throw RequestError.forbidden("frame change without the bar's header") }
        if let site = request.headers[Self.fetchSite], site != "same-origin" {
            throw RequestError.forbidden("frame change from a \(site == "same-site" ? "same-site" : "cross-site") page")
        }
        let form = FormEncoding.decode(String(buffer: try await request.body.collect(upTo: Self.bodyLimit)))
        if form == ["stay": "1"] { return try await stay(session, logger: logger) }
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
