import Foundation
import GatehouseMatrix
import HTTPTypes
import Hummingbird
import NIOCore

/// An event stream (`text/event-stream`) fed by a session's sync loop while the page listens: what the page is told
/// of each change (`render`), `ended` when the session's device is gone, a comment every 20 seconds so that proxies
/// keep it open, and its end when the gateway drains (the page's `EventSource` then reconnects, to another replica).
/// The chat's pages, the calls' pages and the ring on every page use it.
enum LiveStream {
    enum Item: Sendable {
        case update(ChatUpdate)
        case ping
    }

    /// `first`: what the page is told at once; `render`: the text of one change, or `nil` for nothing to tell;
    /// `ended`: told when the stream is over.
    static func response(
        loop: SyncLoop, draining: Draining, first: String, ended: @escaping @Sendable () -> Void = {},
        render: @escaping @Sendable (RoomList.Changes, RoomList) -> String?
    ) async -> Response {
        let (id, updates) = await loop.listen()
        let (items, feed) = AsyncStream<Item>.makeStream(bufferingPolicy: .bufferingNewest(64))
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
