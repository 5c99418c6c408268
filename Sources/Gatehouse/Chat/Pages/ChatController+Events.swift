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
        let strings = renderer.strings
        return await LiveStream.response(loop: loop, draining: chat.draining, first: Self.roomsEvent(rooms, strings: strings)) { changes, list in
            // A call's signalling alone changes nothing the chat shows.
            changes.rooms.isEmpty && changes.gone.isEmpty && changes.messages.isEmpty ? nil : Self.events(changes, list, room: roomFilter, strings: strings)
        }
    }

    /// What one change means to a page: the list and, for the page's room, its new lines (or that it is gone).
    static func events(_ changes: RoomList.Changes, _ list: RoomList, room roomFilter: String?, strings: StringsTable) -> String {
        var text = roomsEvent(list, strings: strings)
        guard let roomFilter else { return text }
        if let room = list.rooms[roomFilter] {
            for message in changes.messages[roomFilter] ?? [] {
                var values = ChatViews.message(message, room: room, me: list.me, strings: strings)
                values["txn"] = message.transactionID
                text += LiveStream.event("message", values)
            }
        }
        if changes.gone.contains(roomFilter) { text += LiveStream.event("gone", ["room": roomFilter]) }
        return text
    }

    static func roomsEvent(_ list: RoomList, strings: StringsTable) -> String {
        LiveStream.event("rooms", ["rooms": list.ordered.map { ChatViews.summary($0, in: list, strings: strings) }, "unread": list.unreadTotal])
    }
}
