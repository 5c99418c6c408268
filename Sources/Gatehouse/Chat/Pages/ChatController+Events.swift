import Foundation
import GatehouseCore
import GatehouseMatrix
import HTTPTypes
import Hummingbird

/// The chat's live updates: one event stream per open page (`LiveStream`). The room list's page hears `rooms` with
/// the rows that changed (rendered by the list's own row, `chat-room-row`), the list's order by id and the unread
/// count; a room's page hears the count, `message` for each new line of its room and `gone` when the member left it.
/// What a change costs is what changed: no page is sent (or made) the whole list again.
extension ChatController {
    func events(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        try GatewayPageIsolation.checkPageToken(request, session: context.session)
        let roomFilter = try request.uri.queryParameters.get("room").map { try ChatFeature.roomID($0) }
        let loop = try await chat.loop(context.session)
        let rooms = try await chat.current(loop)
        if let roomFilter, !rooms.contains(roomFilter) { throw ChatError.notInRoom }
        // The request's language, read now: the body is written after the handler returned.
        let language = RequestLanguage.current
        let renderer = renderer
        let csrf = context.session.csrfToken
        let first = try Self.roomsEvent(rooms, rows: roomFilter == nil ? Set(rooms.rooms.keys) : nil, renderer: renderer, csrf: csrf)
        return await LiveStream.response(loop: loop, draining: chat.draining, first: first) { changes, list in
            // A call's signalling alone changes nothing the chat shows.
            guard !(changes.rooms.isEmpty && changes.gone.isEmpty && changes.messages.isEmpty) else { return nil }
            return RequestLanguage.$current.withValue(language) { Self.events(changes, list, room: roomFilter, renderer: renderer, csrf: csrf) }
        }
    }

    /// What one change means to a page: for the list, its changed rows; for a room's page, its new lines (or that it
    /// is gone); for both, the count.
    static func events(_ changes: RoomList.Changes, _ list: RoomList, room roomFilter: String?, renderer: PageRenderer, csrf: String) -> String {
        guard let roomFilter else { return (try? roomsEvent(list, rows: changes.rooms, renderer: renderer, csrf: csrf)) ?? "" }
        var text = (try? roomsEvent(list, rows: nil, renderer: renderer, csrf: csrf)) ?? ""
        if let room = list.rooms[roomFilter] {
            for message in changes.messages[roomFilter] ?? [] {
                guard let line = try? ChatViews.liveLine(message, room: room, me: list.me, renderer: renderer), !line.isEmpty else { continue }
                text += LiveStream.event("message", line)
            }
        }
        if changes.gone.contains(roomFilter) { text += LiveStream.event("gone", ["room": roomFilter]) }
        return text
    }

    /// `rooms`: the unread count and, for the list (`rows` not `nil`), its order (room ids) and the rows of `rows`
    /// that it holds (the others the page has already).
    static func roomsEvent(_ list: RoomList, rows: Set<String>?, renderer: PageRenderer, csrf: String) throws -> String {
        var values: [String: Any] = ["unread": list.unreadTotal]
        if let rows {
            let ordered = list.ordered
            var rendered: [String: String] = [:]
            for room in ordered where rows.contains(room.id) {
                var row = ChatViews.summary(room, in: list, strings: renderer.strings)
                row["csrf"] = csrf
                rendered[room.id] = try renderer.fragment("chat-room-row", row)
            }
            values["order"] = ordered.map(\.id)
            values["rows"] = rendered
        }
        return LiveStream.event("rooms", values)
    }
}
