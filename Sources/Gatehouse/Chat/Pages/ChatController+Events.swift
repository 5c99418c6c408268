import Foundation
import GatehouseCore
import GatehouseMatrix
import HTTPTypes
import Hummingbird

/// The chat's live updates: one event stream per open page of the chat's (`LiveStream`). The room list's page hears
/// `rooms` with the rows that changed (rendered by the list's own row, `chat-room-row`) and the list's order by id; a
/// room's page hears `message` for each new line of its room, `reactions` for a line whose reactions changed (rendered
/// by the line's own partial, `chat-reactions`), `typing` and `seen` when who types or who saw the member's latest
/// line changed, and `gone` when the member left it. The count is the
/// live feed's (`LiveFeed`), which every page hears. What a change costs is what changed: no page is sent (or made)
/// the whole list again.
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
        let links = chat.links
        let first = roomFilter == nil ? try Self.roomsEvent(rooms, rows: Set(rooms.rooms.keys), renderer: renderer, csrf: csrf) : ""
        return await LiveStream.response(loop: loop, draining: chat.draining, first: first) { changes, list in
            let text = RequestLanguage.$current.withValue(language) {
                Self.events(changes, list, room: roomFilter, renderer: renderer, csrf: csrf, links: links)
            }
            return text.isEmpty ? nil : text
        }
    }

    /// What one change means to a page: for the list, its changed rows; for a room's page, its new lines (or that it
    /// is gone). Empty for nothing.
    static func events(
        _ changes: RoomList.Changes, _ list: RoomList, room roomFilter: String?, renderer: PageRenderer, csrf: String,
        links: @escaping ChatViews.MessageLinks
    ) -> String {
        guard let roomFilter else {
            guard !changes.rooms.isEmpty || !changes.gone.isEmpty else { return "" }
            return (try? roomsEvent(list, rows: changes.rooms, renderer: renderer, csrf: csrf)) ?? ""
        }
        var text = ""
        if let room = list.rooms[roomFilter] {
            for message in changes.messages[roomFilter] ?? [] {
                guard let line = try? ChatViews.liveLine(message, room: room, me: list.me, renderer: renderer, links: links), !line.isEmpty else {
                    continue
                }
                text += LiveStream.event("message", line)
            }
            for line in (changes.reactions[roomFilter] ?? []).sorted() {
                guard let reactions = try? ChatViews.liveReactions(line, room: room, me: list.me, renderer: renderer) else { continue }
                text += LiveStream.event("reactions", reactions)
            }
            if changes.typing.contains(roomFilter) {
                text += LiveStream.event("typing", ["text": ChatViews.typing(list.typing[roomFilter] ?? [], room: room, strings: renderer.strings)])
            }
            // Who saw the member's latest line moves with a receipt, and with a new line of theirs.
            if changes.receipts.contains(roomFilter) || changes.messages[roomFilter]?.contains(where: { $0.sender == list.me }) == true {
                text += LiveStream.event("seen", ChatViews.seen(list, room: room, strings: renderer.strings))
            }
        }
        if changes.gone.contains(roomFilter) { text += LiveStream.event("gone", ["room": roomFilter]) }
        return text
    }

    /// `rooms`: the list's order (room ids) and the rows of `rows` that it holds (the others the page has already).
    static func roomsEvent(_ list: RoomList, rows: Set<String>, renderer: PageRenderer, csrf: String) throws -> String {
        let ordered = list.ordered
        var rendered: [String: String] = [:]
        for room in ordered where rows.contains(room.id) {
            var row = ChatViews.summary(room, in: list, strings: renderer.strings)
            row["csrf"] = csrf
            rendered[room.id] = try renderer.fragment("chat-room-row", row)
        }
        return LiveStream.event("rooms", ["order": ordered.map(\.id), "rows": rendered])
    }

    /// What a message says, for the notification a gateway page shows (`?room=&id=`, with the page's token, which no
    /// app's script can read): the live feed carries no text.
    func notice(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        try GatewayPageIsolation.checkPageToken(request, session: context.session)
        let roomID = try ChatFeature.roomID(request.uri.queryParameters.get("room"))
        guard let id = request.uri.queryParameters.get("id"), ChatFeature.isEventID(id) else { throw RequestError.badRequest("id: an event id") }
        let (loop, _, room) = try await chat.joined(roomID, context.session)
        guard let message = Message(try await chats.matrix(loop).event(room: roomID, id: id), in: room), message.notifies else { throw ChatError.notInRoom }
        return try JSONResponse.make(["id": id, "body": ChatViews.noticeText(message, room: room, strings: renderer.strings)])
    }
}
