import Foundation
import GatehouseCore
import GatehouseMatrix
import HTTPTypes
import Hummingbird

/// The chat's live updates: one event stream per open page (`LiveStream`): `rooms` (the list and the unread count) on
/// every change, `message` for each new line of the page's room, `gone` when the member left it.
extension ChatController {
    func events(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        try GatewayPageIsolation.checkPageToken(request, session: context.session)
        let roomFilter = try request.uri.queryParameters.get("room").map { try ChatFeature.roomID($0) }
        let loop = try await loop(context.session)
        let rooms = try await current(loop)
        if let roomFilter, !rooms.contains(roomFilter) { throw ChatError.notInRoom }
        // The request's language, read now: the body is written after the handler returned.
        let language = RequestLanguage.current
        let renderer = renderer
        return await LiveStream.response(loop: loop, draining: chat.draining, first: Self.roomsEvent(rooms, strings: renderer.strings)) { changes, list in
            // A call's signalling alone changes nothing the chat shows.
            guard !(changes.rooms.isEmpty && changes.gone.isEmpty && changes.messages.isEmpty) else { return nil }
            return RequestLanguage.$current.withValue(language) { Self.events(changes, list, room: roomFilter, renderer: renderer) }
        }
    }

    /// What one change means to a page: the list and, for the page's room, its new lines (or that it is gone).
    static func events(_ changes: RoomList.Changes, _ list: RoomList, room roomFilter: String?, renderer: PageRenderer) -> String {
        var text = roomsEvent(list, strings: renderer.strings)
        guard let roomFilter else { return text }
        if let room = list.rooms[roomFilter] {
            for message in changes.messages[roomFilter] ?? [] {
                guard let line = try? ChatViews.liveLine(message, room: room, me: list.me, renderer: renderer), !line.isEmpty else { continue }
                text += LiveStream.event("message", line)
            }
        }
        if changes.gone.contains(roomFilter) { text += LiveStream.event("gone", ["room": roomFilter]) }
        return text
    }

    static func roomsEvent(_ list: RoomList, strings: StringsTable) -> String {
        LiveStream.event("rooms", ["rooms": list.ordered.map { ChatViews.summary($0, in: list, strings: strings) }, "unread": list.unreadTotal])
    }
}
