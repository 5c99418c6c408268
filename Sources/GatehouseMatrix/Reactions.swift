import Foundation

/// One reaction (`m.reaction`, an `m.annotation` of another event): who put which key (an emoji, or the short text
/// some clients let members type) on which event.
public struct Reaction: Sendable, Equatable {
    public var id: String
    public var target: String
    public var key: String
    public var sender: String

    /// The reaction `event` is, or `nil` for any other event (or a reaction redacted since: its content is gone).
    public init?(_ event: MatrixEvent) {
        guard event.type == "m.reaction", let id = event.eventID, let relation = event.content["m.relates_to"],
            relation["rel_type"]?.string == "m.annotation", let target = relation["event_id"]?.string, let key = relation["key"]?.string, !key.isEmpty
        else { return nil }
        self.init(id: id, target: target, key: key, sender: event.sender)
    }

    public init(id: String, target: String, key: String, sender: String) {
        self.id = id
        self.target = target
        self.key = Self.bounded(key)
        self.sender = sender
    }

    /// The most of a key the gateway sends or keeps: a key another client sent longer than that (the spec sets no
    /// limit; an event may be 64 KB of emoji) is kept cut, so one reaction never grows a page.
    public static let keyLimit = 64
    /// The most characters (grapheme clusters: an emoji with its skin tone or a family joined by ZWJ is one) a key the
    /// member sends may have.
    public static let keyCharacters = 16

    /// Whether the member may send `key`: one to `keyCharacters` characters within `keyLimit` bytes, on one line,
    /// with no control character.
    public static func isValidKey(_ key: String) -> Bool {
        !key.isEmpty && key.count <= keyCharacters && key.utf8.count <= keyLimit && key == key.trimmingCharacters(in: .whitespacesAndNewlines)
            && !key.unicodeScalars.contains { $0.properties.generalCategory == .control || $0.properties.generalCategory == .lineSeparator }
    }

    static func bounded(_ key: String) -> String {
        guard key.utf8.count > keyLimit else { return key }
        var kept = ""
        for character in key {
            guard kept.utf8.count + character.utf8.count <= keyLimit - 3 else { break }
            kept.append(character)
        }
        return kept + "…"
    }
}

/// The reactions to one message, as a line shows them: each key with who put it there, in the order the keys came.
/// A member's second reaction with a key they already put is no second one (the homeserver refuses it from them; from
/// a client that got through, it counts once).
public struct Reactions: Sendable, Equatable {
    public struct Entry: Sendable, Equatable {
        public var key: String
        /// Who reacted with it, in the order they did.
        public var senders: [String]
        /// The reactions' event ids, one per sender (the one a member takes back is theirs).
        public var events: [String]
    }

    public private(set) var entries: [Entry] = []

    /// The most keys one message keeps: more (a flood from another client) are not shown.
    public static let entryLimit = 24

    public init() {}

    public var isEmpty: Bool { entries.isEmpty }

    /// Adds a reaction; whether it changed what the line shows.
    @discardableResult
    public mutating func add(_ reaction: Reaction) -> Bool {
        if let index = entries.firstIndex(where: { $0.key == reaction.key }) {
            guard !entries[index].senders.contains(reaction.sender) else { return false }
            entries[index].senders.append(reaction.sender)
            entries[index].events.append(reaction.id)
            return true
        }
        guard entries.count < Self.entryLimit else { return false }
        entries.append(Entry(key: reaction.key, senders: [reaction.sender], events: [reaction.id]))
        return true
    }

    /// Takes back the reaction `event` (redacted); whether it was here.
    @discardableResult
    public mutating func remove(event: String) -> Bool {
        for index in entries.indices {
            guard let position = entries[index].events.firstIndex(of: event) else { continue }
            entries[index].events.remove(at: position)
            entries[index].senders.remove(at: position)
            if entries[index].senders.isEmpty { entries.remove(at: index) }
            return true
        }
        return false
    }

    /// The reaction `sender` put with `key`, if they did.
    public func event(of sender: String, key: String) -> String? {
        guard let entry = entries.first(where: { $0.key == key }), let position = entry.senders.firstIndex(of: sender) else { return nil }
        return entry.events[position]
    }
}
