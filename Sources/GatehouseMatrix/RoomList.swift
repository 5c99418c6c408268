import Foundation

/// The member's rooms as `/sync` describes them, kept up to date one answer at a time: names, members, the last
/// message, unread counts, invites. A value: `apply` takes an answer and says which rooms changed and what arrived,
/// tested without a homeserver.
public struct RoomList: Sendable, Equatable {
    public private(set) var rooms: [String: Room] = [:]
    /// Rooms the member's account data marks as direct chats (`m.direct`): room id → the other member.
    public private(set) var directRooms: [String: String] = [:]
    /// The member's one-to-one calls, from their direct chats' `m.call.*` events.
    public private(set) var calls = CallLog()
    /// Rooms the member muted (`PushRules.mutedRooms`): the homeserver counts nothing for them, the gateway tells of
    /// nothing in them.
    public private(set) var mutedRooms: Set<String> = []
    /// Who is typing in each room now (the member never among them): the homeserver's `m.typing`, which it ends by
    /// itself when they stop.
    public private(set) var typing: [String: [String]] = [:]
    /// How far each member (the member included) has read each room: room → user → the event of their read receipt.
    /// Kept apart from the rooms, so that a receipt or a key pressed is no change of the room's row.
    public private(set) var receipts: [String: [String: String]] = [:]
    /// Whether an answer was applied: the first (the rooms as they were) tells the member of nothing.
    public private(set) var isPrimed = false
    public let me: String

    public init(me: String) { self.me = me }

    /// What one answer changed.
    public struct Changes: Sendable, Equatable {
        /// Rooms whose summary changed (new, renamed, a message, an unread count, an invite), in no order.
        public var rooms: Set<String> = []
        /// Rooms the member is no longer in (left, declined, kicked).
        public var gone: Set<String> = []
        /// New timeline events per room, oldest first, as messages.
        public var messages: [String: [Message]] = [:]
        /// New call signals, oldest first, in rooms of two (a call in a group is not one the gateway takes part in).
        public var calls: [CallSignal] = []
        /// What the member is to be told of (a notification, a sound): the new messages of others that raised their
        /// room's notification count, per room, oldest first. The homeserver's push rules decided (a muted room raises
        /// none, a mention always does), and the member's own messages, from any device, raise none.
        public var notifying: [String: [Message]] = [:]
        /// Rooms of `notifying` whose new messages mention the member (the highlight count rose).
        public var mentioning: Set<String> = []
        /// Invites that arrived.
        public var invited: Set<String> = []
        /// Lines whose reactions changed, per room.
        public var reactions: [String: Set<String>] = [:]
        /// Rooms where who is typing changed.
        public var typing: Set<String> = []
        /// Rooms where somebody's read receipt moved.
        public var receipts: Set<String> = []

        public var isEmpty: Bool {
            rooms.isEmpty && gone.isEmpty && messages.isEmpty && calls.isEmpty && reactions.isEmpty && typing.isEmpty && receipts.isEmpty
        }
    }

    public mutating func apply(_ sync: SyncResponse) -> Changes {
        var changes = Changes()
        for event in sync.accountData where event.type == "m.direct" {
            var direct: [String: String] = [:]
            for (user, rooms) in event.content.object ?? [:] {
                for room in rooms.array ?? [] { if let id = room.string { direct[id] = user } }
            }
            for id in Set(direct.keys).symmetricDifference(directRooms.keys) where rooms[id] != nil { changes.rooms.insert(id) }
            directRooms = direct
        }
        for event in sync.accountData where event.type == "m.push_rules" {
            let muted = PushRules.mutedRooms(event.content)
            changes.rooms.formUnion(muted.symmetricDifference(mutedRooms).filter { rooms[$0] != nil })
            mutedRooms = muted
        }
        for (id, joined) in sync.rooms.join {
            var room = rooms[id] ?? Room(id: id)
            let before = room
            room.membership = .joined
            room.inviter = nil
            for event in joined.state { room.applyState(event) }
            var arrived: [Message] = []
            for event in joined.timeline {
                if event.stateKey != nil { room.applyState(event) }
                if let signal = CallSignal(event, room: id), room.isOneToOne, calls.apply(signal) { changes.calls.append(signal) }
                defer { if let eventID = event.eventID { room.place(eventID) } }
                if let reaction = Reaction(event) {
                    if room.react(reaction) { changes.reactions[id, default: []].insert(reaction.target) }
                    continue
                }
                // A line deleted (by its sender, or a moderator: the homeserver allowed it) is told as deleted; a
                // reaction deleted is taken back.
                if let target = event.redactedEvent, let eventID = event.eventID {
                    if room.forget(target) {
                        arrived.append(Message(id: eventID, sender: event.sender, body: "", timestamp: event.timestamp ?? 0, kind: .deleted, replaces: target))
                        if room.lastMessage?.id == target { room.lastMessage?.markDeleted() }
                    } else if let line = room.unreact(target) {
                        changes.reactions[id, default: []].insert(line)
                    }
                    continue
                }
                if let message = Message(event, in: room) {
                    // An edit the room's recent lines do not allow (another member's, of a line that is no message, or of
                    // one too old to be known here) is not passed on: the page shows it once rendered, if it is allowed.
                    if message.isEdit {
                        guard let original = room.recentLines.last(where: { $0.id == message.replaces }), original.mayBeReplaced(by: message) else { continue }
                    } else {
                        room.lastMessage = message
                        room.remember(message)
                    }
                    arrived.append(message)
                    room.lastActivity = max(room.lastActivity, message.timestamp)
                }
            }
            if let count = joined.notificationCount {
                let rise = isPrimed ? count - before.unread : 0
                let told = arrived.filter { $0.sender != me && !$0.isEdit && $0.notifies }
                if rise > 0, !told.isEmpty {
                    changes.notifying[id] = Array(told.suffix(rise))
                    if (joined.highlightCount ?? 0) > before.highlights { changes.mentioning.insert(id) }
                }
                room.unread = count
            }
            if let highlights = joined.highlightCount { room.highlights = highlights }
            applyEphemeral(joined.ephemeral, room: id, &changes)
            rooms[id] = room
            if !arrived.isEmpty { changes.messages[id] = arrived }
            if room != before { changes.rooms.insert(id) }
        }
        for (id, invited) in sync.rooms.invite {
            var room = rooms[id] ?? Room(id: id)
            if isPrimed, room.membership != .invited { changes.invited.insert(id) }
            room.membership = .invited
            for event in invited.state {
                room.applyState(event)
                if event.type == "m.room.member", event.stateKey == me {
                    room.inviter = event.sender
                    if event.content["is_direct"]?.bool == true { room.invitedAsDirect = true }
                    if let ts = event.timestamp { room.lastActivity = max(room.lastActivity, ts) }
                }
            }
            rooms[id] = room
            changes.rooms.insert(id)
        }
        for id in sync.rooms.leave.keys where rooms.removeValue(forKey: id) != nil {
            changes.gone.insert(id)
            changes.rooms.remove(id)
            typing[id] = nil
            receipts[id] = nil
        }
        isPrimed = true
        return changes
    }

    /// Who is typing (`m.typing`, the member left out) and who read how far (`m.receipt`: public receipts, and the
    /// member's own private one).
    private mutating func applyEphemeral(_ events: [MatrixEvent], room id: String, _ changes: inout Changes) {
        for event in events {
            switch event.type {
            case "m.typing":
                let users = (event.content["user_ids"]?.array ?? []).compactMap(\.string).filter { $0 != me }.prefix(Self.typingLimit)
                if typing[id, default: []] != Array(users) {
                    typing[id] = users.isEmpty ? nil : Array(users)
                    changes.typing.insert(id)
                }
            case "m.receipt":
                for (eventID, kinds) in event.content.object ?? [:] {
                    for kind in ["m.read", "m.read.private"] {
                        for user in (kinds[kind]?.object ?? [:]).keys where kind == "m.read" || user == me {
                            guard receipts[id]?[user] != eventID else { continue }
                            receipts[id, default: [:]][user] = eventID
                            changes.receipts.insert(id)
                        }
                    }
                }
            default: break
            }
        }
    }

    /// The most members typing at once that a room keeps (the page says "several people" past two).
    static let typingLimit = 20

    /// The member's latest message in a room, as far as the room's recent lines go, and who else has read up to it or
    /// past it (their read receipts), by user id: "Seen" under it.
    public func seen(in roomID: String) -> (line: String, readers: [String])? {
        guard let room = rooms[roomID], let index = room.recentLines.lastIndex(where: { $0.sender == me && $0.notifies }) else { return nil }
        let readers = (receipts[roomID] ?? [:]).compactMap { user, event in
            user != me && (room.lineIndex(at: event) ?? -1) >= index ? user : nil
        }
        return (room.recentLines[index].id, readers.sorted())
    }

    /// The member's rooms as listed: invites first, then by the latest activity, newest first. Story rooms are not
    /// chats: Stories shows them.
    public var ordered: [Room] {
        rooms.values.filter { !$0.isStories }.sorted { a, b in
            if (a.membership == .invited) != (b.membership == .invited) { return a.membership == .invited }
            if a.lastActivity != b.lastActivity { return a.lastActivity > b.lastActivity }
            return a.id < b.id
        }
    }

    /// Unread messages over every joined room (the bar's count).
    /// What waits for the member: unread messages, and each invite as one (a new chat is news too).
    public var unreadTotal: Int {
        rooms.values.reduce(0) { total, room in
            switch (room.isStories, room.membership) {
            case (true, _): total
            case (false, .joined): total + room.unread
            case (false, .invited): total + 1
            }
        }
    }

    /// The story rooms the member is in or invited to (their own among them).
    public var storyRooms: [Room] { rooms.values.filter(\.isStories).sorted { $0.id < $1.id } }

    /// Whether the member is in `roomID` (joined or invited).
    public func contains(_ roomID: String) -> Bool { rooms[roomID] != nil }

    /// The direct chat with `userID` the member is in, if any (the account data's, else a room of two marked direct
    /// when it was made).
    public func directRoom(with userID: String) -> String? {
        if let id = directRooms.first(where: { $0.value == userID && rooms[$0.key]?.membership == .joined })?.key { return id }
        return rooms.values.first { room in
            room.membership == .joined && room.isDirect && room.joinedMembers.count <= 2 && room.members[userID]?.membership == "join"
        }?.id
    }

    /// A member's name as `room` (else the first room of the member's that knows them) writes it (`Room.name(of:)`).
    public func displayName(ofUser user: String, in room: Room? = nil) -> String {
        if let room, room.members[user] != nil { return room.name(of: user) }
        return rooms.values.first { $0.members[user]?.displayName != nil }?.name(of: user) ?? Room.isolated(user)
    }

    /// The room's name as the member reads it: its own name, else the other members' names; empty for none. Every
    /// name isolated (`Room.isolated`).
    public func displayName(of room: Room) -> String {
        if let name = room.name, !name.isEmpty { return Room.isolated(name) }
        let others = room.members.filter { $0.key != me && ($0.value.membership == "join" || $0.value.membership == "invite") }
            .map { room.shownName(of: $0.key) }.sorted().map(Room.isolated)
        if !others.isEmpty { return others.joined(separator: ", ") }
        if let inviter = room.inviter { return room.name(of: inviter) }
        return ""
    }

    /// Whether `room` is a direct chat: marked so in the account data, or made as one.
    public func isDirect(_ room: Room) -> Bool { directRooms[room.id] != nil || room.isDirect || room.invitedAsDirect }
}
