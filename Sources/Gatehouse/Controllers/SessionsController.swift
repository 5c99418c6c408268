import Foundation
import GatehouseCore
import GatehouseStorage
import HTTPTypes
import Hummingbird

/// "Your sessions" (`/account/sessions`, from the account menu): every live session of the member, with the browser
/// and system it signed in from, its address, when it signed in and was last active, "this browser" marked; each
/// other one can be ended, or all of them at once. An ended session's cookie is refused on every replica (the store
/// and the state caches forget it) and its jar goes with it; the provider's session stays (this browser's own
/// sign-out, which also ends that, is the account menu's).
struct SessionsController: Sendable {
    let sessions: any SessionStore
    let events: EventRecorder
    let renderer: PageRenderer
    let configuration: GatehouseConfiguration

    func addRoutes(to group: RouterGroup<SignedInRequestContext>) {
        group.get(RouterPath(stringLiteral: Paths.sessions)) { request, context in try await page(request, session: context.session) }
        group.post(RouterPath(stringLiteral: Paths.sessions + "/end")) { request, context in
            try await end(request, session: context.session, everyOther: false)
        }
        group.post(RouterPath(stringLiteral: Paths.sessions + "/end-others")) { request, context in
            try await end(request, session: context.session, everyOther: true)
        }
        // Where a sign-in to stay signed in ends, in the tab it opened: the member's other tabs hear of it.
        group.get(RouterPath(stringLiteral: Paths.sessionRenewed)) { _, _ in
            try renderer.page("session-renewed", title: renderer.strings["session_renewed_title"], ["sessionRenewed": true])
        }
    }

    /// The member's live sessions, the most recently active first.
    func live(of session: Session) async throws -> [Session] {
        let now = Date()
        let idleCutoff = now.addingTimeInterval(-TimeInterval(configuration.session.idleTimeoutSeconds))
        return try await sessions.sessions(subject: session.identity.sub, now: now, idleCutoff: idleCutoff)
    }

    func page(_ request: Request, session current: Session) async throws -> Response {
        let strings = renderer.strings
        let listed = try await live(of: current).map { session -> [String: Any] in
            let (browser, system) = session.device?.summary ?? (nil, nil)
            let name = strings.text(
                "sessions_device",
                ["browser": browser ?? strings["sessions_unknown_browser"], "system": system ?? strings["sessions_unknown_system"]])
            var item: [String: Any] = [
                "handle": SessionHandle.of(session.id), "name": name, "signedIn": Self.time(session.createdAt, strings.locale),
                "lastActive": Self.time(session.lastSeenAt, strings.locale), "signedInISO": Self.iso(session.createdAt),
                "lastActiveISO": Self.iso(session.lastSeenAt),
                "endLabel": strings.text("sessions_end_label", ["name": name]),
            ]
            if let address = session.device?.address { item["address"] = address }
            if session.id == current.id { item["current"] = true }
            return item
        }
        var values: [String: Any] = ["sessions": listed, "csrf": current.csrfToken, "hasOthers": listed.count > 1]
        switch request.uri.queryParameters.get("ended") {
        case "one": values["notice"] = strings["sessions_ended_one"]
        case "others": values["notice"] = strings["sessions_ended_others"]
        case "gone": values["notice"] = strings["sessions_already_ended"]
        default: break
        }
        return try renderer.page("sessions", title: strings["sessions_title"], values)
    }

    func end(_ request: Request, session current: Session, everyOther: Bool) async throws -> Response {
        let form = try await FormPost.read(request, session: current, publicOrigin: configuration.publicOrigin)
        let others = try await live(of: current).filter { $0.id != current.id }
        let ending = everyOther ? others : others.filter { SessionHandle.of($0.id) == form["session"] }
        for session in ending {
            try await sessions.end(id: session.id, until: session.expiresAt)
            events.record(.ssoLogout, sub: session.identity.sub, detail: "ended_from_another_session")
        }
        let outcome = everyOther ? "others" : (ending.isEmpty ? "gone" : "one")
        return Response(status: .seeOther, headers: [.location: Paths.sessions + "?ended=" + outcome, .cacheControl: "no-store"])
    }

    static func time(_ date: Date, _ locale: Locale) -> String {
        date.formatted(Date.FormatStyle(date: .abbreviated, time: .shortened, timeZone: TimeZone(identifier: "UTC")!).locale(locale)) + " UTC"
    }

    static func iso(_ date: Date) -> String {
        date.formatted(.iso8601)
    }
}
