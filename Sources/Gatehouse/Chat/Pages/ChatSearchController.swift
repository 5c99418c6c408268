import Foundation
import GatehouseCore
import GatehouseMatrix
import Hummingbird

/// Search (`/chats/search?q=`): the member's chats by name, people in the directory, and messages in every room of
/// theirs (or in one, `room=`) through the homeserver's full-text search, which covers them all since the gateway's
/// rooms are not end-to-end encrypted. A message found opens its room at it (`/chats/room?id=&at=`, `ChatController`).
struct ChatSearchController: Sendable {
    let chat: ChatFeature

    var chats: ChatSessions { chat.chats }
    var renderer: PageRenderer { chat.renderer }

    func addRoutes(to group: RouterGroup<SignedInRequestContext>) {
        chat.routes(.chats, on: group).pages.get(RouterPath(stringLiteral: Paths.chatSearch)) { request, context in try await search(request, context) }
    }

    /// The most a search's words may be.
    static let searchLimit = 200
    /// Messages a page of results lists.
    static let searchPage = 20

    func search(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        let query = ChatFeature.query(request)
        let term = String((query["q"] ?? "").trimmingCharacters(in: .whitespacesAndNewlines).prefix(Self.searchLimit))
        let roomFilter = try query["room"].flatMap { $0.isEmpty ? nil : try ChatFeature.roomID($0) }
        let next = query["next"].flatMap { $0.utf8.count <= 500 ? $0 : nil }
        let loop = try await chat.loop(context.session)
        let list = try await chat.current(loop)
        if let roomFilter, list.rooms[roomFilter]?.membership != .joined { throw ChatError.notInRoom }
        let strings = renderer.strings
        var values: [String: Any] = ["query": term, "searched": !term.isEmpty]
        if let roomFilter, let room = list.rooms[roomFilter] {
            values["room"] = roomFilter
            values["roomName"] = list.displayName(of: room)
            values["everywhere"] = FormEncoding.url(Paths.chatSearch, adding: [("q", term)])
        }
        if !term.isEmpty {
            let found = try await chats.matrix(loop).search(term: term, room: roomFilter, limit: Self.searchPage, next: next)
            let messages = ChatViews.found(found.events, in: list, strings: strings)
            values["messages"] = messages
            values["hasMessages"] = !messages.isEmpty
            values["noMessages"] = messages.isEmpty ? strings.text("chat_search_no_messages", ["query": term]) : nil
            if let more = found.next {
                values["more"] = FormEncoding.url(Paths.chatSearch, adding: [("q", term), ("room", roomFilter ?? ""), ("next", more)])
            }
            if roomFilter == nil, next == nil {
                // Chats by their name, and people, in the same box.
                let lowered = term.lowercased()
                let rooms = list.ordered.filter { $0.membership == .joined && list.displayName(of: $0).lowercased().contains(lowered) }.prefix(10)
                values["rooms"] = rooms.map { ChatViews.summary($0, in: list, strings: strings) }
                values["hasRooms"] = !rooms.isEmpty
                let me = context.session.identity.sub
                let people = try await chat.registrations.directory(search: term, limit: 10).filter { $0.sub != me && $0.chatUserID != nil }
                values["people"] = people.map { ChatViews.person($0) }
                values["hasPeople"] = !people.isEmpty
            }
        }
        return try renderer.page(
            "chats-search", title: strings["chat_search_title"],
            try await chat.portal.values(.chats, context.session) { page in page.merge(values) { _, new in new } })
    }
}
