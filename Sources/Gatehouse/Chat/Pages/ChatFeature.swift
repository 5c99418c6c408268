import Foundation
import GatehouseCore
import GatehouseMatrix
import GatehouseStorage
import Hummingbird

/// What the chat's three features (Chats, Calls, Stories) share: the members' Matrix sessions (`ChatSessions`), the
/// page chrome (the portal's), the directory, the drain of their live streams, and the gate that keeps each
/// feature's routes to the members it is for. The controllers of the three take this, never each other.
struct ChatFeature: Sendable {
    let chats: ChatSessions
    let portal: any FeatureChrome
    let registrations: any RegistrationStore
    let renderer: PageRenderer
    let publicOrigin: String
    /// The gateway's drain, which ends the pages' event streams before the server stops.
    let draining: Draining
    let features: FeaturesConfiguration
    /// Where a link in a message takes the member (`AppCatalog.messageLink`).
    let links: ChatViews.MessageLinks

    /// Whether the member may use `tab` (`.chats`, `.calls` or `.stories`): registered, with a chat account, and
    /// both Chats and the feature theirs.
    func allows(_ tab: FeatureTab, _ session: Session) -> Bool {
        Self.allows(tab, session, chats: chats, features: features)
    }

    /// The rule itself, for what answers outside the gate too (the live feed on an app's host, `LiveFeed`).
    static func allows(_ tab: FeatureTab, _ session: Session, chats: ChatSessions, features: FeaturesConfiguration) -> Bool {
        chats.mayChat(session) && features.mayUse(tab, session)
    }

    /// The two groups of a feature's routes, each behind its gate: `pages` answer a member the feature is not for
    /// with the portal's page for it (the onboarding prompt at `sso`), `actions` (forms, the scripts' requests,
    /// streams) with `chat_not_allowed`.
    func routes(_ tab: FeatureTab, on group: RouterGroup<SignedInRequestContext>)
        -> (pages: RouterGroup<SignedInRequestContext>, actions: RouterGroup<SignedInRequestContext>)
    {
        (
            group.group().add(middleware: FeatureGate(tab: tab, feature: self, answersWithPage: true)),
            group.group().add(middleware: FeatureGate(tab: tab, feature: self, answersWithPage: false))
        )
    }

    // MARK: - The member's rooms

    func loop(_ session: Session) async throws -> SyncLoop {
        try await chats.loop(for: session)
    }

    func current(_ loop: SyncLoop) async throws -> RoomList {
        try await chats.current(loop)
    }

    /// The member's sync loop, their rooms, and `roomID` among them as a room they have joined; `chat_not_in_room`
    /// for one they have not (an id changed in a form or a URL, an invite not accepted, a room left).
    func joined(_ roomID: String, _ session: Session) async throws -> (loop: SyncLoop, list: RoomList, room: Room) {
        let loop = try await loop(session)
        let list = try await current(loop)
        guard let room = list.rooms[roomID], room.membership == .joined else { throw ChatError.notInRoom }
        return (loop, list, room)
    }

    func roomList(_ session: Session) async throws -> RoomList {
        try await current(loop(session))
    }

    /// The member's direct chat with the registered member who has `username`, made (and them invited) the first time.
    func directRoom(withUsername username: String?, _ session: Session) async throws -> String {
        guard let username, let userID = try await chatUserID(ofUsername: username), userID != session.chatUserID
        else { throw RequestError.badRequest("username: a registered member's username is required") }
        let loop = try await loop(session)
        if let existing = try await current(loop).directRoom(with: userID) { return existing }
        let matrix = chats.matrix(loop)
        let roomID = try await matrix.createRoom(name: nil, invite: [userID], direct: true)
        try? await matrix.addDirect(room: roomID, with: userID)
        _ = try? await loop.refresh()
        return roomID
    }

    /// The chat account of the member with exactly this username (any letter case), one indexed look-up: a member is
    /// always found by their username, whatever they chose about being discoverable.
    func chatUserID(ofUsername username: String) async throws -> String? {
        guard let found = try await registrations.lookup(username), found.username.lowercased() == username.lowercased() else { return nil }
        return found.chatUserID
    }

    // MARK: - Forms

    /// A page's query as a form sent by `GET` writes it (`+` a space, as browsers send a search's words).
    static func query(_ request: Request) -> [String: String] { FormEncoding.decode(request.uri.query ?? "") }

    /// A room id as Matrix writes them (`!opaque:server`, or `!opaque` from room version 12 on), or a `400`.
    static func roomID(_ text: String?) throws -> String {
        guard let text, text.hasPrefix("!"), text.utf8.count > 1, text.utf8.count <= 255,
            text.unicodeScalars.allSatisfy({ $0.isASCII && $0.value > 0x20 && $0 != "/" && $0 != "?" && $0 != "#" })
        else { throw RequestError.badRequest("id: a room id (!…:server) is required") }
        return text
    }

    /// Whether a form's or a query's text may name an event to the homeserver (`$…`, as long as an id may be).
    static func isEventID(_ text: String) -> Bool { text.hasPrefix("$") && text.utf8.count <= 255 }

    static func redirect(_ location: String) -> Response {
        Response(status: .seeOther, headers: [.location: location, .cacheControl: "no-store"])
    }
}

/// The gateway's page chrome around the chat's pages (the portal's tabs, header and bar), and its page for a
/// feature a member may not use (the onboarding prompt at `sso`): the portal's (`PortalController`), so that the
/// chat's pages depend on no other controller.
protocol FeatureChrome: Sendable {
    func feature(_ tab: FeatureTab, _ context: SignedInRequestContext, toast: String?) async throws -> Response
    func values(_ current: FeatureTab, _ session: Session, _ customize: (inout [String: Any]) -> Void) async throws -> [String: Any]
}

extension FeatureChrome {
    func feature(_ tab: FeatureTab, _ context: SignedInRequestContext) async throws -> Response {
        try await feature(tab, context, toast: nil)
    }
}

/// A chat feature's gate, before its routes' handlers: a member it is not for never reaches them.
struct FeatureGate: RouterMiddleware {
    typealias Context = SignedInRequestContext
    let tab: FeatureTab
    let feature: ChatFeature
    let answersWithPage: Bool

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard feature.allows(tab, context.session) else {
            if answersWithPage { return try await feature.portal.feature(tab, context) }
            throw ChatError.notAllowed
        }
        return try await next(request, context)
    }
}
