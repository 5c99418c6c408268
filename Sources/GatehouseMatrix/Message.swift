import Foundation

/// A timeline event as the chat shows it: a message (text, its edits and deletion shown as such), a line about the
/// room (who joined, left, was invited), or a message another client encrypted, which cannot be read here. The body
/// is kept as the sender's text, always shown as text, never as markup.
public struct Message: Sendable, Equatable, Identifiable {
    public enum Kind: String, Sendable, Equatable {
        case text
        /// `m.emote`: "* Bob waves".
        case emote
        case notice
        /// Deleted (redacted) since it was sent.
        case deleted
        /// `m.room.encrypted`: sent by a client with end-to-end encryption.
        case encrypted
        /// Someone joined, left, was invited or declined (the body says who, for the page to word).
        case membership
        /// A kind of message the gateway does not show (an image, a file): its description.
        case other
        /// A call started or ended (`call` says which: `audio`, `video`, `ended`, `missed`, `declined`).
        case call
        /// The room was changed (`change` says how: `name`, `topic`, `admin`, `unadmin`; `value` the new name or
        /// topic, `target` the member made an admin or no longer one).
        case state
    }

    public var id: String
    public var sender: String
    public var senderName: String?
    public var body: String
    /// The sender's markup of it (`formatted_body` in `org.matrix.custom.html`), as sent: never shown but through the
    /// gateway's allowlist (`MessageMarkup.sanitized`).
    public var formattedBody: String?
    public var timestamp: Int
    public var kind: Kind
    /// The text was edited after it was sent (the body is the newest text).
    public var isEdited = false
    /// This event only edits `replaces`: it is not a line of its own.
    public var replaces: String?
    /// For a membership line: what happened (`join`, `leave`, `invite`, `decline`) and to whom.
    public var membership: String?
    public var target: String?
    /// The id the sending device gave it (`unsigned.transaction_id`): only the sender's own device sees it, and its
    /// page matches the message it showed as pending.
    public var transactionID: String?
    /// For a call line: what happened.
    public var call: String?
    /// The message this one answers (`m.in_reply_to`).
    public var replyTo: String?
    /// The members the message mentions (`m.mentions`), as far as `mentionLimit` goes.
    public var mentions: [String] = []
    /// For a line about a change of the room: what changed, and to what.
    public var change: String?
    public var value: String?

    public var isEdit: Bool { replaces != nil }

    /// What is left of a message deleted since it came: who sent it and when.
    mutating func markDeleted() {
        kind = .deleted
        body = ""
        formattedBody = nil
        isEdited = false
    }

    /// This event deletes `replaces` (a redaction, told as the deleted line).
    public var isDeletion: Bool { kind == .deleted && replaces != nil }

    /// Whether the member who sent it may change it (edit its text): a message of text, not a line about the room, a
    /// call, an edit or a deletion.
    public var isEditable: Bool { !isEdit && [.text, .emote, .notice].contains(kind) }

    /// Whether a member is told of this line when it arrives: a message, not a line about the room or a call (a call
    /// rings instead) or a deletion.
    public var notifies: Bool { [.text, .emote, .notice, .other, .encrypted].contains(kind) }

    /// Whether `edit` may replace this message's text: the spec's rule that the original and its replacement have the
    /// same sender (another member's `m.replace` is ignored), and that only a message of text is edited, never a line
    /// about the room, a call, an edit itself or a deleted message.
    public func mayBeReplaced(by edit: Message) -> Bool {
        edit.isEdit && !edit.isDeletion && edit.replaces == id && edit.sender == sender && isEditable
    }

    public init(
        id: String, sender: String, senderName: String? = nil, body: String, timestamp: Int, kind: Kind, isEdited: Bool = false, replaces: String? = nil
    ) {
        self.id = id
        self.sender = sender
        self.senderName = senderName
        self.body = body
        self.timestamp = timestamp
        self.kind = kind
        self.isEdited = isEdited
        self.replaces = replaces
    }

    /// The most a body is kept to: as much as the gateway's composer sends (`ChatController.messageLimit`), so that a
    /// member's message is shown whole; a longer one another client sent (up to the homeserver's 64 KB per event) is
    /// shown cut, never refused, and never allowed to grow a page without bound.
    public static let bodyLimit = 32 * 1024
    /// The most members one message mentions: a message the gateway sends names no more, and of another client's
    /// flood only these are read.
    public static let mentionLimit = 20
    /// The most of a room's new name or topic a line about it keeps.
    public static let stateValueLimit = 500

    /// The message `event` shows in `room`, or `nil` for events that are not lines of the timeline (state the list
    /// keeps, reactions, receipts).
    public init?(_ event: MatrixEvent, in room: Room) {
        guard let id = event.eventID else { return nil }
        self.init(lineOf: event, id: id, in: room)
        transactionID = event.unsigned?["transaction_id"]?.string
    }

    private init?(lineOf event: MatrixEvent, id: String, in room: Room) {
        let name = room.members[event.sender]?.displayName
        let timestamp = event.timestamp ?? 0
        switch event.type {
        case "m.room.message":
            if event.isRedacted || event.content.object?.isEmpty == true {
                self.init(id: id, sender: event.sender, senderName: name, body: "", timestamp: timestamp, kind: .deleted)
                return
            }
            let relation = event.content["m.relates_to"]
            if relation?["rel_type"]?.string == "m.replace" {
                // A replacement is one only with the original's id and its new content (the spec's rules); its fallback
                // body is for clients that do not know edits, never shown as the message.
                guard let original = relation?["event_id"]?.string, let newContent = event.content["m.new_content"], let newest = newContent["body"]?.string
                else { return nil }
                self.init(id: id, sender: event.sender, senderName: name, body: Self.kept(newest), timestamp: timestamp, kind: .text, isEdited: true,
                    replaces: original)
                formattedBody = Self.formatted(newContent)
                return
            }
            let body = Self.kept(event.content["body"]?.string ?? "")
            switch event.content["msgtype"]?.string {
            case "m.text": self.init(id: id, sender: event.sender, senderName: name, body: body, timestamp: timestamp, kind: .text)
            case "m.emote": self.init(id: id, sender: event.sender, senderName: name, body: body, timestamp: timestamp, kind: .emote)
            case "m.notice": self.init(id: id, sender: event.sender, senderName: name, body: body, timestamp: timestamp, kind: .notice)
            default: self.init(id: id, sender: event.sender, senderName: name, body: body, timestamp: timestamp, kind: .other)
            }
            if kind != .other { formattedBody = Self.formatted(event.content) }
            mentions = (event.content["m.mentions"]?["user_ids"]?.array ?? []).prefix(Self.mentionLimit).compactMap(\.string)
            if let answered = relation?["m.in_reply_to"]?["event_id"]?.string, answered.hasPrefix("$") {
                replyTo = answered
                self.body = Self.withoutReplyFallback(self.body)
            }
        case "m.call.invite", "m.call.hangup", "m.call.reject":
            guard let signal = CallSignal(event, room: room.id), room.isOneToOne else { return nil }
            self.init(id: id, sender: event.sender, senderName: name, body: "", timestamp: timestamp, kind: .call)
            switch signal.kind {
            case .invite: call = Call(invite: signal).media.rawValue
            case .reject: call = "declined"
            default: call = signal.content["reason"]?.string == "invite_timeout" ? "missed" : "ended"
            }
        case "m.room.encrypted":
            self.init(id: id, sender: event.sender, senderName: name, body: "", timestamp: timestamp, kind: .encrypted)
        case "m.room.name", "m.room.topic":
            guard event.stateKey == "" else { return nil }
            let key = event.type == "m.room.name" ? "name" : "topic"
            self.init(id: id, sender: event.sender, senderName: name, body: "", timestamp: timestamp, kind: .state)
            change = key
            value = String((event.content[key]?.string ?? "").prefix(Self.stateValueLimit))
        case "m.room.power_levels":
            // The room's first levels (its creation) are no line; later, a member made an admin or no longer one is.
            guard event.stateKey == "", let before = event.unsigned?["prev_content"], before.object != nil else { return nil }
            let old = PowerLevels(before), new = PowerLevels(event.content)
            let users = Set(old.users.keys).union(new.users.keys).sorted()
            func isAdmin(_ levels: PowerLevels, _ user: String) -> Bool { levels.level(of: user) >= PowerLevels.admin }
            guard let user = users.first(where: { isAdmin(old, $0) != isAdmin(new, $0) }) else { return nil }
            self.init(id: id, sender: event.sender, senderName: name, body: "", timestamp: timestamp, kind: .state)
            change = new.level(of: user) >= PowerLevels.admin ? "admin" : "unadmin"
            target = user
        case "m.room.member":
            guard let target = event.stateKey, let membership = event.content["membership"]?.string else { return nil }
            // A change of name or avatar is not a line.
            let previous = event.unsigned?["prev_content"]?["membership"]?.string
            if previous == membership, membership == "join" { return nil }
            self.init(id: id, sender: event.sender, senderName: name, body: "", timestamp: timestamp, kind: .membership)
            self.membership = membership == "leave" && target != event.sender ? "removed" : membership == "leave" && previous == "invite" ? "decline" : membership
            self.target = target
        default:
            return nil
        }
    }

    /// A reply's body without the quote older clients put before it (`> <@bob:server> what Bob said`, then a blank
    /// line): the page quotes the answered message itself.
    static func withoutReplyFallback(_ body: String) -> String {
        let lines = body.split(separator: "\n", omittingEmptySubsequences: false)
        guard lines.first?.hasPrefix("> <") == true, let blank = lines.firstIndex(where: { !$0.hasPrefix(">") }), lines[blank].isEmpty else { return body }
        return lines[(blank + 1)...].joined(separator: "\n")
    }

    /// A content's `formatted_body` when it is Matrix's HTML, within the body's limit.
    static func formatted(_ content: JSONValue) -> String? {
        guard content["format"]?.string == "org.matrix.custom.html", let html = content["formatted_body"]?.string else { return nil }
        return kept(html)
    }

    static func kept(_ text: String) -> String {
        text.utf8.count <= bodyLimit ? text : String(decoding: Array(text.utf8.prefix(bodyLimit)), as: UTF8.self) + "…"
    }
}
