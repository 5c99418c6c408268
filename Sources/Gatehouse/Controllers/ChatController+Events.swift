import Foundation
import GatehouseCore
import GatehouseMatrix
import HTTPTypes
import Hummingbird

/// The chat's live updates: one event stream (`text/event-stream`) per open page, fed by the session's sync loop,
/// which runs while at least one page listens. `rooms` (the list and the unread count) on every change, `message`
/// for each new line of the page's room, `ended` when the session's device is gone; a comment every 20 seconds
/// keeps proxies from closing the stream.
extension ChatController {
    enum StreamItem: Sendable {
        case update(ChatUpdate)
        case ping
    }

    func events(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        guard chats.mayChat(context.session) else { throw ChatError.notAllowed }
        try GatewayPageIsolation.checkPageToken(request, session: context.session)
        let roomFilter = try request.uri.queryParameters.get("room").map { try Self.roomID($0) }
        let loop = try await loop(context.session)
        let rooms = try await current(loop)
        if let roomFilter, !rooms.contains(roomFilter) { throw ChatError.notInRoom }
        // The request's language, read now: the body is written after the handler returned.
        let strings = renderer.strings
        let (id, updates) = await loop.listen()
        let first = Self.roomsEvent(rooms, strings: strings)
        // The stream's items: the loop's updates, a ping every 20 seconds, and its end when the gateway's drain is
        // over (the page's EventSource then reconnects, to another replica).
        let (items, feed) = AsyncStream<StreamItem>.makeStream(bufferingPolicy: .bufferingNewest(64))
        let forward = Task {
            for await update in updates { feed.yield(.update(update)) }
            feed.finish()
        }
        let ticker = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(20))
                feed.yield(.ping)
            }
        }
        let drained = Task { [draining] in
            await draining.wait()
            feed.finish()
        }
        let body = ResponseBody { [draining] writer in
            await draining.relaying {
                do {
                    try await writer.write(ByteBuffer(string: "retry: 3000\n\n" + first))
                    stream: for await item in items {
                        switch item {
                        case .ping:
                            try await writer.write(ByteBuffer(string: ": ping\n\n"))
                        case .update(.ended):
                            try await writer.write(ByteBuffer(string: "event: ended\ndata: {}\n\n"))
                            break stream
                        case .update(.changed(let changes, let list)):
                            try await writer.write(ByteBuffer(string: Self.events(changes, list, room: roomFilter, strings: strings)))
                        }
                    }
                } catch {
                    // The page went away: the loop is told below.
                }
            }
            forward.cancel()
            ticker.cancel()
            drained.cancel()
            await loop.stopListening(id)
            try? await writer.finish(nil)
        }
        return Response(
            status: .ok,
            headers: [.contentType: "text/event-stream; charset=utf-8", .cacheControl: "no-store", HTTPField.Name("X-Accel-Buffering")!: "no"],
            body: body)
    }

    /// What one change means to a page: the list and, for the page's room, its new lines (or that it is gone).
    static func events(_ changes: RoomList.Changes, _ list: RoomList, room roomFilter: String?, strings: StringsTable) -> String {
        var text = roomsEvent(list, strings: strings)
        guard let roomFilter else { return text }
        if let room = list.rooms[roomFilter] {
            for message in changes.messages[roomFilter] ?? [] {
                var values = ChatViews.message(message, room: room, me: list.me, strings: strings)
                values["txn"] = message.transactionID
                text += event("message", values)
            }
        }
        if changes.gone.contains(roomFilter) { text += event("gone", ["room": roomFilter]) }
        return text
    }

    static func roomsEvent(_ list: RoomList, strings: StringsTable) -> String {
        event("rooms", ["rooms": list.ordered.map { ChatViews.summary($0, in: list, strings: strings) }, "unread": list.unreadTotal])
    }

    /// One event of the stream: its name and its data as one line of JSON.
    static func event(_ name: String, _ data: [String: Any]) -> String {
        let json = (try? JSONSerialization.data(withJSONObject: TemplateValues.present(data), options: [.sortedKeys])).map {
            String(decoding: $0, as: UTF8.self)
        } ?? "{}"
        return "event: \(name)\ndata: \(json)\n\n"
    }
}
