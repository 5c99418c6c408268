import Foundation
import GatehouseMatrix
import HTTPTypes
import Hummingbird
import NIOConcurrencyHelpers
import NIOCore

/// An event stream (`text/event-stream`) fed by a session's sync loop while the page listens: what the page is told
/// of each change (`render`), `ended` when the session's device is gone, `homeserver` when the homeserver stops
/// answering or answers again, a comment every 20 seconds so that proxies keep it open, and its end when the gateway
/// drains (the page's `EventSource` then reconnects, to another replica).
/// The chat's pages, the calls' pages and the ring on every page use it.
enum LiveStream {
    enum Item: Sendable {
        case update(ChatUpdate)
        case ping
    }

    /// `first`: what the page is told at once; `render`: the text of one change, or `nil` for nothing to tell;
    /// `ended`: told when the stream is over.
    /// `poked`: given what makes the stream write a ping at once.
    static func response(
        loop: SyncLoop, draining: Draining, first: String, ended: @escaping @Sendable () -> Void = {},
        poked: (@escaping @Sendable () -> Void) -> Void = { _ in }, render: @escaping @Sendable (RoomList.Changes, RoomList) -> String?
    ) async -> Response {
        let (id, updates) = await loop.listen()
        let (items, feed) = AsyncStream<Item>.makeStream(bufferingPolicy: .bufferingNewest(64))
        poked { feed.yield(.ping) }
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
                        case .update(.reachable(let up)):
                            try await writer.write(ByteBuffer(string: event("homeserver", ["up": up])))
                        case .update(.changed(let changes, let list)):
                            if let text = render(changes, list) { try await writer.write(ByteBuffer(string: text)) }
                        }
                    }
                } catch {
                    // The page went away: the loop is told below.
                }
            }
            forward.cancel()
            ticker.cancel()
            drained.cancel()
            ended()
            await loop.stopListening(id)
            try? await writer.finish(nil)
        }
        return Response(
            status: .ok,
            headers: [.contentType: "text/event-stream; charset=utf-8", .cacheControl: "no-store", HTTPField.Name("X-Accel-Buffering")!: "no"],
            body: body)
    }

    /// One event of a stream: its name and its data as one line of JSON.
    static func event(_ name: String, _ data: [String: Any]) -> String {
        let json = (try? JSONSerialization.data(withJSONObject: TemplateValues.present(data), options: [.sortedKeys])).map {
            String(decoding: $0, as: UTF8.self)
        } ?? "{}"
        return "event: \(name)\ndata: \(json)\n\n"
    }
}

/// The live streams open on this replica, per session, and which of a session's notifies: the newest on the
/// gateway's host, else the newest of all. Kept with the sessions' loops (`ChatSessions.streams`), so that a reload
/// of the configuration does not lose the streams already open.
final class LiveStreams: Sendable {
    struct Ticket: Sendable, Hashable {
        let session: String
        let number: Int
    }

    private struct Open {
        var onGateway: [Int: Bool] = [:]
        /// What makes each stream write at once (`probe`).
        var pokes: [Int: @Sendable () -> Void] = [:]
        var next = 0
    }

    private let open = NIOLockedValueBox<[String: Open]>([:])

    func open(session: String, onGateway: Bool) -> Ticket {
        open.withLockedValue { open in
            var streams = open[session] ?? Open()
            let number = streams.next
            streams.next += 1
            streams.onGateway[number] = onGateway
            open[session] = streams
            return Ticket(session: session, number: number)
        }
    }

    func close(_ ticket: Ticket) {
        open.withLockedValue { open in
            open[ticket.session]?.onGateway.removeValue(forKey: ticket.number)
            open[ticket.session]?.pokes.removeValue(forKey: ticket.number)
            if open[ticket.session]?.onGateway.isEmpty == true { open.removeValue(forKey: ticket.session) }
        }
    }

    /// Whether a page of the session's listens on this replica (it notifies, so a push would say it twice).
    func isOpen(session: String) -> Bool {
        open.withLockedValue { $0[session] != nil }
    }

    /// `poke` makes the stream of `ticket` write at once.
    func setPoke(_ ticket: Ticket, _ poke: @escaping @Sendable () -> Void) {
        open.withLockedValue { $0[ticket.session]?.pokes[ticket.number] = poke }
    }

    /// Whether a page of the session's still listens, asked of the streams themselves: each writes at once, three
    /// times, and one whose page went away since its last ping fails to and closes (the first write after the
    /// browser left is still taken by the system; its answer, a reset, fails the next). About half a second.
    func stillOpen(session: String) async -> Bool {
        let pokes = open.withLockedValue { $0[session].map { Array($0.pokes.values) } ?? [] }
        guard isOpen(session: session) else { return false }
        for _ in 0..<3 {
            for poke in pokes { poke() }
            try? await Task.sleep(for: .milliseconds(150))
        }
        try? await Task.sleep(for: .milliseconds(100))
        return isOpen(session: session)
    }

    /// Whether the stream of `ticket` is the one of its session that notifies.
    func notifies(_ ticket: Ticket) -> Bool {
        open.withLockedValue { open in
            guard let streams = open[ticket.session]?.onGateway else { return false }
            let chosen = streams.filter(\.value).keys.max() ?? streams.keys.max()
            return chosen == ticket.number
        }
    }
}
