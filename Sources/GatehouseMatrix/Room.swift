import Foundation

/// One room as the list shows it.
public struct Room: Sendable, Equatable, Identifiable {
    public enum Membership: String, Sendable { case joined, invited }

    public struct Member: Sendable, Equatable {
        public var membership: String
        public var displayName: String?
    }

    public let id: String
    public var membership: Membership = .joined
    public var name: String?
    public var topic: String?
    public var members: [String: Member] = [:]
    /// Made as a direct chat (`is_direct` on the creator's invite, or the creation's preset).
    public var isDirect = false
    public var invitedAsDirect = false
    /// Another client turned encryption on (`m.room.encryption`): its messages cannot be read here.
    public var isEncrypted = false
    public var inviter: String?
    public var lastMessage: Message?
    /// The room's latest lines as they came (`recentLimit` at most), against which a live edit is checked.
    public private(set) var recentLines: [Message] = []
    /// The reactions to the recent lines, by line.
    public private(set) var reactions: [String: Reactions] = [:]
    /// The recent reactions' lines, by the reaction's event id (for one taken back).
    private var reactionLines: [String: String] = [:]
    /// The room's recent events, each with the line it follows (the latest line when it came; itself for a line):
    /// where a read receipt at an event that is no line (a reaction, an edit) is.
    private var placed: [Placement] = []

    struct Placement: Sendable, Equatable {
        var event: String
        var line: String
    }
    public var unread = 0
    /// Of the unread, how many mention the member.
    public var highlights = 0
    public var lastActivity = 0
    /// The room's type (`m.room.create`'s `type`): `Room.storiesType` for a member's stories.
    public var roomType: String?
    /// Who made the room (the creation's sender): a story room's author.
    public var creator: String?
    /// Who may do what (`m.room.power_levels`); `nil` before the room has any (its creator an admin, `levels`).
    public var powerLevels: PowerLevels?
    /// The creators a room version 12 or later puts above every level (`PowerLevels.creators`).
    public var privilegedCreators: Set<String> = []

    /// Who may do what in the room now.
    public var levels: PowerLevels {
        var levels = powerLevels ?? PowerLevels(creator: creator)
        levels.creators = privilegedCreators
        return levels
    }

    /// The type of a member's story room, which the gateway makes for them at their first story.
    public static let storiesType = "org.gatehouse.stories"

    public init(id: String) { self.id = id }

    /// How many of a room's latest lines are kept to check edits against.
    public static let recentLimit = 200
    /// How much of a recent line's text is kept (what a reply quotes of it).
    public static let gistLength = 140

    mutating func remember(_ line: Message) {
        var kept = line
        // Who sent it, what kind of line it is and the start of its text (a reply's quote of it) are asked of it.
        kept.body = String(line.body.prefix(Self.gistLength))
        kept.formattedBody = nil
        recentLines.append(kept)
        guard recentLines.count > Self.recentLimit else { return }
        for old in recentLines.prefix(recentLines.count - Self.recentLimit) {
            for event in reactions.removeValue(forKey: old.id)?.entries.flatMap(\.events) ?? [] { reactionLines[event] = nil }
        }
        recentLines.removeFirst(recentLines.count - Self.recentLimit)
    }

    /// Puts a reaction on its line, if it is a recent one; whether the line's reactions changed.
    mutating func react(_ reaction: Reaction) -> Bool {
        guard reactionLines[reaction.id] == nil, recentLines.contains(where: { $0.id == reaction.target && $0.notifies }),
            reactions[reaction.target, default: Reactions()].add(reaction)
        else { return false }
        reactionLines[reaction.id] = reaction.target
        return true
    }

    /// Takes a reaction back (redacted); the line it was on, if the room knew it.
    mutating func unreact(_ event: String) -> String? {
        guard let line = reactionLines.removeValue(forKey: event) else { return nil }
        reactions[line]?.remove(event: event)
        if reactions[line]?.isEmpty == true { reactions[line] = nil }
        return line
    }

    /// Notes where an event of the timeline came: after the latest line (`placed`).
    mutating func place(_ event: String) {
        guard let line = recentLines.last?.id else { return }
        placed.append(Placement(event: event, line: line))
        if placed.count > 2 * Self.recentLimit { placed.removeFirst(placed.count - 2 * Self.recentLimit) }
    }

    /// Where among the recent lines an event is: its own line, or the line it came after; `nil` for one older than
    /// they go.
    public func lineIndex(at event: String) -> Int? {
        if let index = recentLines.lastIndex(where: { $0.id == event }) { return index }
        guard let line = placed.last(where: { $0.event == event })?.line else { return nil }
        return recentLines.lastIndex { $0.id == line }
    }

    /// Marks a recent line deleted, its reactions gone with it; whether the room had it.
    mutating func forget(_ id: String) -> Bool {
        guard let index = recentLines.lastIndex(where: { $0.id == id }) else { return false }
        recentLines[index].markDeleted()
        for event in reactions.removeValue(forKey: id)?.entries.flatMap(\.events) ?? [] { reactionLines[event] = nil }
        return true
    }

    public var isStories: Bool { roomType == Self.storiesType }

    public var joinedMembers: [String] { members.filter { $0.value.membership == "join" }.map(\.key).sorted() }

    /// The one place a member's name becomes text (`name(of:)`): their display name, with their user id beside it
    /// where another member of the room (joined or invited) has the same one, so that an impostor is told apart (the
    /// spec's rule); their id where they have none. Never markup, never a template: a name holding `{name}` is that text.
    public func shownName(of user: String) -> String {
        guard let name = members[user]?.displayName?.trimmingCharacters(in: .whitespacesAndNewlines), !name.isEmpty else { return user }
        let shared = members.contains { other in
            other.key != user && (other.value.membership == "join" || other.value.membership == "invite")
                && other.value.displayName?.trimmingCharacters(in: .whitespacesAndNewlines) == name
        }
        return shared ? "\(name) (\(user))" : name
    }

    /// `shownName(of:)` isolated (`isolated`), as every page and sentence of the gateway's writes it.
    public func name(of user: String) -> String { Self.isolated(shownName(of: user)) }

    /// `text` in a first-strong isolate (FSI … PDI): whatever direction its letters take, and whatever bidirectional
    /// controls it leaves open (an unclosed right-to-left override), the words around it keep theirs, in every language.
    public static func isolated(_ text: String) -> String { "\u{2068}" + text + "\u{2069}" }

    /// A room of two at most (joined or invited): where a call is one-to-one.
    public var isOneToOne: Bool { members.values.filter { $0.membership == "join" || $0.membership == "invite" }.count <= 2 }

    mutating func applyState(_ event: MatrixEvent) {
        switch event.type {
        case "m.room.name": name = event.content["name"]?.string
        case "m.room.topic": topic = event.content["topic"]?.string
        case "m.room.encryption": isEncrypted = true
        case "m.room.power_levels": powerLevels = PowerLevels(event.content)
        case "m.room.member":
            guard let user = event.stateKey else { return }
            let membership = event.content["membership"]?.string ?? "leave"
            members[user] = Member(membership: membership, displayName: event.content["displayname"]?.string ?? members[user]?.displayName)
            if event.content["is_direct"]?.bool == true { isDirect = true }
        case "m.room.create":
            if let ts = event.timestamp { lastActivity = max(lastActivity, ts) }
            roomType = event.content["type"]?.string
            creator = event.sender.isEmpty ? nil : event.sender
            // From room version 12 its creators stand above the levels (MSC4289).
            if let version = event.content["room_version"]?.string, let number = Int(version), number >= 12, let creator {
                privilegedCreators = Set([creator] + (event.content["additional_creators"]?.array ?? []).compactMap(\.string))
            }
        default: break
        }
    }
}
