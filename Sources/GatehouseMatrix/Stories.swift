import Foundation

/// One story: a short text its author posted into their story room, who has seen it, and when it goes.
public struct Story: Sendable, Equatable, Identifiable {
    public let id: String
    public let room: String
    public let author: String
    public var body: String
    public var timestamp: Int
    /// The members who opened it (not its author).
    public var seenBy: Set<String> = []

    /// The event type of a story, which only the room's creator may send (the room's power levels say so).
    public static let eventType = "org.gatehouse.story"
    /// A viewer's mark that they saw a story (`m.reference` to it).
    public static let seenType = "org.gatehouse.story.seen"
    /// The most a story's text is.
    public static let textLimit = 500
}

/// A story room's stories as its events tell (`/messages` with the story types): the live ones within `lifetime`
/// of `now`, oldest first, each with its viewers; and those past it, which the gateway redacts. A value, tested
/// without a homeserver.
public struct StoryBook: Sendable, Equatable {
    public private(set) var live: [Story] = []
    /// Stories older than the lifetime and not yet redacted.
    public private(set) var expired: [Story] = []

    /// `events` in any order; `lifetime` in milliseconds.
    public init(room: Room, events: [MatrixEvent], now: Int, lifetime: Int) {
        guard let author = room.creator else { return }
        var stories: [String: Story] = [:]
        var seen: [String: Set<String>] = [:]
        for event in events {
            guard let id = event.eventID else { continue }
            switch event.type {
            case Story.eventType where event.sender == author && !event.isRedacted:
                guard let body = event.content["body"]?.string, !body.isEmpty else { continue }
                let text = body.count > Story.textLimit ? String(body.prefix(Story.textLimit)) + "…" : body
                stories[id] = Story(id: id, room: room.id, author: author, body: text, timestamp: event.timestamp ?? 0)
            case Story.seenType where event.sender != author:
                if let target = event.content["m.relates_to"]?["event_id"]?.string { seen[target, default: []].insert(event.sender) }
            default:
                continue
            }
        }
        for (id, viewers) in seen { stories[id]?.seenBy = viewers }
        let ordered = stories.values.sorted { $0.timestamp != $1.timestamp ? $0.timestamp < $1.timestamp : $0.id < $1.id }
        live = ordered.filter { $0.timestamp > now - lifetime }
        expired = ordered.filter { $0.timestamp <= now - lifetime }
    }

    /// Whether `member` has a live story here they have not seen.
    public func hasNew(for member: String) -> Bool { live.contains { $0.author != member && !$0.seenBy.contains(member) } }
}
