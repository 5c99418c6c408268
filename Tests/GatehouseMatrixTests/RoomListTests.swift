import Foundation
import Testing

@testable import GatehouseMatrix

/// The room list and the timeline's lines from `/sync` answers: names, invites first, newest first, unread counts,
/// direct chats, rooms left; edits, deletions, encrypted messages and hostile text shown as they are.
@Suite struct RoomListTests {
    static let alice = "@alice:chat.test", bob = "@bob:chat.test", carol = "@carol:chat.test"

    static func member(_ user: String, _ membership: String, name: String? = nil, by sender: String? = nil, direct: Bool = false, ts: Int = 1)
        -> MatrixEvent
    {
        var content: [String: JSONValue] = ["membership": .string(membership)]
        if let name { content["displayname"] = .string(name) }
        if direct { content["is_direct"] = .bool(true) }
        return MatrixEvent(type: "m.room.member", eventID: "$m-\(user)-\(membership)-\(ts)", sender: sender ?? user, timestamp: ts, stateKey: user, content: .object(content))
    }

    static func text(_ id: String, _ sender: String, _ body: String, ts: Int) -> MatrixEvent {
        MatrixEvent(type: "m.room.message", eventID: id, sender: sender, timestamp: ts, content: .object(["msgtype": .string("m.text"), "body": .string(body)]))
    }

    static func joined(_ state: [MatrixEvent] = [], _ timeline: [MatrixEvent] = [], unread: Int? = nil) -> SyncResponse.JoinedRoom {
        SyncResponse.JoinedRoom(state: state, timeline: timeline, notificationCount: unread)
    }

    @Test func directChatsGroupsInvitesAndOrder() {
        var list = RoomList(me: Self.alice)
        let first = SyncResponse(
            nextBatch: "s1",
            rooms: .init(
                join: [
                    "!dm": Self.joined(
                        [Self.member(Self.alice, "join", name: "Alice"), Self.member(Self.bob, "join", name: "Bob Baker", direct: true)],
                        [Self.text("$1", Self.bob, "Hello Alice 👋", ts: 100)], unread: 1),
                    "!group": Self.joined(
                        [MatrixEvent(type: "m.room.name", eventID: "$n", sender: Self.alice, timestamp: 10, stateKey: "", content: .object(["name": .string("Team")]))],
                        [Self.text("$2", Self.alice, "Morning", ts: 50)]),
                ],
                invite: ["!invite": .init(state: [Self.member(Self.carol, "join", name: "Carol"), Self.member(Self.alice, "invite", by: Self.carol, direct: true, ts: 20)])]),
            accountData: [MatrixEvent(type: "m.direct", sender: "", content: .object([Self.bob: .array([.string("!dm")])]))])
        let changes = list.apply(first)
        #expect(changes.rooms == ["!dm", "!group", "!invite"])
        #expect(changes.messages["!dm"]?.map(\.body) == ["Hello Alice 👋"])
        // Invites first, then the newest activity first.
        #expect(list.ordered.map(\.id) == ["!invite", "!dm", "!group"])
        #expect(list.displayName(of: list.rooms["!dm"]!) == "\u{2068}Bob Baker\u{2069}" && list.displayName(of: list.rooms["!group"]!) == "\u{2068}Team\u{2069}")
        #expect(list.displayName(of: list.rooms["!invite"]!) == "\u{2068}Carol\u{2069}" && list.rooms["!invite"]?.inviter == Self.carol)
        // The unread message and the invite wait for the member.
        #expect(list.unreadTotal == 2 && list.directRoom(with: Self.bob) == "!dm" && list.directRoom(with: Self.carol) == nil)
        #expect(list.isDirect(list.rooms["!dm"]!) && !list.isDirect(list.rooms["!group"]!))

        // A new message moves its room up and counts; the invite accepted is a room like the others; a room left is gone.
        let second = SyncResponse(
            nextBatch: "s2",
            rooms: .init(
                join: ["!group": Self.joined([], [Self.text("$3", Self.bob, "News", ts: 300)], unread: 2), "!invite": Self.joined([Self.member(Self.alice, "join")])],
                leave: ["!dm": .init()]))
        let next = list.apply(second)
        #expect(next.gone == ["!dm"] && next.rooms == ["!group", "!invite"])
        #expect(list.ordered.first?.id == "!group" && list.rooms["!group"]?.lastMessage?.body == "News")
        #expect(list.rooms["!invite"]?.membership == .joined && list.rooms["!invite"]?.inviter == nil)
        #expect(list.unreadTotal == 2 && !list.contains("!dm"))
        // An answer with nothing new changes nothing.
        #expect(list.apply(SyncResponse(nextBatch: "s3")).isEmpty)
    }

    /// What the member is told of: others' messages that raised the room's count (the homeserver's push rules
    /// decide), a mention said so, an invite; never the first answer, the member's own lines, edits or a muted room.
    @Test func whatTheMemberIsToldOf() {
        var list = RoomList(me: Self.alice)
        let members = [Self.member(Self.alice, "join", name: "Alice"), Self.member(Self.bob, "join", name: "Bob")]
        // The first answer is the rooms as they were: unread, but nothing new to tell of.
        let first = list.apply(SyncResponse(
            nextBatch: "s1", rooms: .init(join: ["!dm": Self.joined(members, [Self.text("$old", Self.bob, "Earlier", ts: 10)], unread: 1)])))
        #expect(first.notifying.isEmpty && first.invited.isEmpty)

        // Two of Bob's and one of Alice's own (from another device), an edit of Bob's: the count rose by two.
        let edit = Self.edit("$e", by: Self.bob, of: "$b1", ts: 23)
        var joined = Self.joined([], [
            Self.text("$b1", Self.bob, "one", ts: 20), Self.text("$a1", Self.alice, "mine", ts: 21), Self.text("$b2", Self.bob, "two @alice", ts: 22), edit,
        ], unread: 3)
        joined.highlightCount = 1
        let second = list.apply(SyncResponse(nextBatch: "s2", rooms: .init(join: ["!dm": joined])))
        #expect(second.notifying["!dm"]?.map(\.id) == ["$b1", "$b2"] && second.mentioning == ["!dm"])

        // A message that raised no count (a muted room: the homeserver counted nothing) tells of nothing; nor does
        // a count that fell (read elsewhere).
        let quiet = list.apply(SyncResponse(nextBatch: "s3", rooms: .init(join: ["!dm": Self.joined([], [Self.text("$b3", Self.bob, "hush", ts: 30)], unread: 3)])))
        #expect(quiet.notifying.isEmpty && quiet.messages["!dm"]?.count == 1)
        #expect(list.apply(SyncResponse(nextBatch: "s4", rooms: .init(join: ["!dm": Self.joined([], [], unread: 0)]))).notifying.isEmpty)

        // An invite that arrives is told once.
        let invite = SyncResponse.InvitedRoom(state: [Self.member(Self.carol, "join", name: "Carol"), Self.member(Self.alice, "invite", by: Self.carol, ts: 40)])
        #expect(list.apply(SyncResponse(nextBatch: "s5", rooms: .init(invite: ["!new": invite]))).invited == ["!new"])
        #expect(list.apply(SyncResponse(nextBatch: "s6", rooms: .init(invite: ["!new": invite]))).invited.isEmpty)
    }

    /// A reply names what it answers; the quote older clients put before its text goes (the page quotes the message
    /// itself); a body that only looks like one stays whole.
    @Test func repliesAndTheirFallbacks() throws {
        let room = Room(id: "!r")
        func reply(_ body: String, to target: JSONValue = .string("$a")) -> Message? {
            Message(MatrixEvent(type: "m.room.message", eventID: "$r", sender: Self.bob, timestamp: 1, content: .object([
                "msgtype": .string("m.text"), "body": .string(body), "m.relates_to": .object(["m.in_reply_to": .object(["event_id": target])]),
            ])), in: room)
        }
        let answered = try #require(reply("> <@alice:chat.test> what alice said\n> more\n\nthe answer"))
        #expect(answered.replyTo == "$a" && answered.body == "the answer")
        #expect(reply("> not a fallback\nstill the text")?.body == "> not a fallback\nstill the text")
        #expect(reply("plain", to: .string("not-an-id"))?.replyTo == nil && reply("plain", to: .number(3))?.replyTo == nil)
    }

    /// A chat is muted by an override rule for it alone that does nothing (as Element mutes); any other rule is no mute.
    @Test func mutedRoomsFromPushRules() throws {
        func rules(_ override: [JSONValue]) -> MatrixEvent {
            MatrixEvent(type: "m.push_rules", sender: "", content: .object(["global": .object(["override": .array(override)])]))
        }
        func rule(_ id: String, pattern: String? = nil, actions: [JSONValue] = [], enabled: Bool = true, key: String = "room_id") -> JSONValue {
            var made = PushRules.muteRule(room: pattern ?? id).object ?? [:]
            made["rule_id"] = .string(id)
            made["enabled"] = .bool(enabled)
            made["actions"] = .array(actions)
            if key != "room_id" { made["conditions"] = .array([.object(["kind": .string("event_match"), "key": .string(key), "pattern": .string(id)])]) }
            return .object(made)
        }
        var list = RoomList(me: Self.alice)
        _ = list.apply(SyncResponse(nextBatch: "s1", rooms: .init(join: ["!a": Self.joined(), "!b": Self.joined()])))
        let changes = list.apply(SyncResponse(nextBatch: "s2", rooms: .init(), accountData: [rules([
            rule("!a"), rule("!b", actions: [.string("notify")]), rule("!c", enabled: false), rule("!d", pattern: "!other"),
            rule("!e", key: "sender"), rule("!f", actions: [.string("dont_notify")]), rule(".m.rule.master"),
        ])]))
        #expect(list.mutedRooms == ["!a", "!f"] && changes.rooms == ["!a"])
        _ = list.apply(SyncResponse(nextBatch: "s3", rooms: .init(), accountData: [rules([])]))
        #expect(list.mutedRooms.isEmpty)
    }

    @Test func linesOfTheTimeline() throws {
        var room = Room(id: "!r")
        room.members[Self.bob] = .init(membership: "join", displayName: "Bob")
        let edit = MatrixEvent(
            type: "m.room.message", eventID: "$e", sender: Self.bob, timestamp: 2,
            content: .object([
                "msgtype": .string("m.text"), "body": .string("* fixed"), "m.new_content": .object(["body": .string("fixed")]),
                "m.relates_to": .object(["rel_type": .string("m.replace"), "event_id": .string("$1")]),
            ]))
        let edited = try #require(Message(edit, in: room))
        #expect(edited.isEdit && edited.replaces == "$1" && edited.body == "fixed" && edited.isEdited && edited.senderName == "Bob")
        let deleted = MatrixEvent(
            type: "m.room.message", eventID: "$d", sender: Self.bob, timestamp: 3, content: .object([:]),
            unsigned: .object(["redacted_because": .object([:])]))
        #expect(Message(deleted, in: room)?.kind == .deleted)
        let encrypted = MatrixEvent(type: "m.room.encrypted", eventID: "$x", sender: Self.bob, timestamp: 4, content: .object(["ciphertext": .string("…")]))
        #expect(Message(encrypted, in: room)?.kind == .encrypted)
        // Markup, scripts and right-to-left overrides are kept as the sender's text, to be shown as text.
        let hostile = "<script>alert(1)</script><b>bold</b> \u{202E}evil"
        #expect(Message(Self.text("$h", Self.bob, hostile, ts: 5), in: room)?.body == hostile)
        // A 64 KB body is cut to the limit, not refused.
        let long = Message(Self.text("$l", Self.bob, String(repeating: "a", count: 64 * 1024), ts: 6), in: room)
        #expect(long.map { $0.body.utf8.count <= Message.bodyLimit + 3 } == true)
        // Joins, leaves and invites are lines; a name change is not; state the list keeps is not.
        #expect(Message(Self.member(Self.carol, "invite", by: Self.bob), in: room)?.membership == "invite")
        var rename = Self.member(Self.bob, "join", name: "Robert")
        rename.unsigned = .object(["prev_content": .object(["membership": .string("join")])])
        #expect(Message(rename, in: room) == nil)
        #expect(Message(MatrixEvent(type: "m.reaction", eventID: "$r", sender: Self.bob, timestamp: 7), in: room) == nil)
    }

    static func edit(_ id: String, by sender: String, of original: String, newContent: Bool = true, ts: Int) -> MatrixEvent {
        var content: [String: JSONValue] = [
            "msgtype": .string("m.text"), "body": .string("* forged"),
            "m.relates_to": .object(["rel_type": .string("m.replace"), "event_id": .string(original)]),
        ]
        if newContent { content["m.new_content"] = .object(["msgtype": .string("m.text"), "body": .string("rewritten by \(sender)")]) }
        return MatrixEvent(type: "m.room.message", eventID: id, sender: sender, timestamp: ts, content: .object(content))
    }

    /// The spec's rule for replacements, at the one place live lines come from: an edit passes only from the sender of
    /// the message it edits, with its new content, and only of a message (not a line about the room); else it is not
    /// passed on at all.
    @Test(arguments: [
        ("another member's edit of alice's message", Self.edit("$e", by: Self.bob, of: "$a", ts: 20), false),
        ("alice's own edit without m.new_content", Self.edit("$e", by: Self.alice, of: "$a", newContent: false, ts: 20), false),
        ("an edit of a membership line", Self.edit("$e", by: Self.bob, of: "$m-@bob:chat.test-join-1", ts: 20), false),
        ("an edit of a message the room never had", Self.edit("$e", by: Self.alice, of: "$unknown", ts: 20), false),
        ("an edit of an edit", Self.edit("$e2", by: Self.alice, of: "$e0", ts: 20), false),
        ("alice's own edit", Self.edit("$e", by: Self.alice, of: "$a", ts: 20), true),
    ])
    func onlyTheSendersOwnEditReplacesAMessage(what: String, edit: MatrixEvent, applies: Bool) {
        var list = RoomList(me: Self.bob)
        _ = list.apply(
            SyncResponse(
                nextBatch: "s1",
                rooms: .init(join: [
                    "!r": Self.joined(
                        [Self.member(Self.alice, "join", name: "Alice"), Self.member(Self.bob, "join", name: "Bob")],
                        [Self.text("$a", Self.alice, "the original", ts: 10), Self.edit("$e0", by: Self.alice, of: "$a", ts: 11)])
                ])))
        let changes = list.apply(SyncResponse(nextBatch: "s2", rooms: .init(join: ["!r": Self.joined([], [edit])])))
        let passed = changes.messages["!r"] ?? []
        #expect(passed.isEmpty == !applies, "\(what)")
        // The page renders the same rule from the room's history.
        let room = list.rooms["!r"]!
        let original = Message(Self.text("$a", Self.alice, "the original", ts: 10), in: room)!
        let parsed = Message(edit, in: room)
        #expect((parsed.map { original.mayBeReplaced(by: $0) } ?? false) == applies, "\(what)")
    }

    /// Names as the gateway writes them: isolated in every language (a right-to-left override left open reverses no
    /// word after it), told apart from a member who took the same display name, the id where there is none, and never
    /// read as a placeholder.
    @Test func namesAreIsolatedToldApartAndNeverTemplates() {
        var list = RoomList(me: Self.carol)
        let mallory = "@mallory:chat.test", nameless = "@nameless:chat.test"
        _ = list.apply(
            SyncResponse(
                nextBatch: "s1",
                rooms: .init(join: [
                    "!r": Self.joined([
                        Self.member(Self.alice, "join", name: "Alice Archer"), Self.member(mallory, "join", name: " Alice Archer "),
                        Self.member(Self.bob, "join", name: "\u{202E}Bob"), Self.member(nameless, "join"), Self.member(Self.carol, "join", name: "{target}"),
                    ])
                ])))
        let room = list.rooms["!r"]!
        #expect(room.name(of: Self.alice) == "\u{2068}Alice Archer (@alice:chat.test)\u{2069}")
        #expect(room.name(of: mallory) == "\u{2068}Alice Archer (@mallory:chat.test)\u{2069}")
        #expect(room.name(of: Self.bob) == "\u{2068}\u{202E}Bob\u{2069}")
        #expect(room.name(of: nameless) == "\u{2068}@nameless:chat.test\u{2069}")
        #expect(room.name(of: Self.carol) == "\u{2068}{target}\u{2069}")
        // Once the look-alike leaves, the name alone is unique again.
        _ = list.apply(SyncResponse(nextBatch: "s2", rooms: .init(join: ["!r": Self.joined([Self.member(mallory, "leave")])])))
        #expect(list.rooms["!r"]!.name(of: Self.alice) == "\u{2068}Alice Archer\u{2069}")
    }

    @Test func encryptedRoomsAreMarked() {
        var list = RoomList(me: Self.alice)
        _ = list.apply(
            SyncResponse(
                nextBatch: "s",
                rooms: .init(join: [
                    "!e": Self.joined([MatrixEvent(type: "m.room.encryption", eventID: "$c", sender: Self.bob, timestamp: 1, stateKey: "", content: .object(["algorithm": .string("m.megolm.v1.aes-sha2")]))])
                ])))
        #expect(list.rooms["!e"]?.isEncrypted == true)
    }

    @Test func syncAnswersDecode() throws {
        let json = #"""
            {"next_batch":"s9","account_data":{"events":[{"type":"m.direct","content":{"@bob:chat.test":["!dm"]}}]},
             "rooms":{"join":{"!dm":{"timeline":{"events":[{"type":"m.room.message","event_id":"$1","sender":"@bob:chat.test",
               "origin_server_ts":5,"content":{"msgtype":"m.text","body":"hi"}}],"limited":true,"prev_batch":"p1"},
               "state":{"events":[]},"unread_notifications":{"notification_count":3}}},
               "invite":{"!i":{"invite_state":{"events":[{"type":"m.room.member","state_key":"@alice:chat.test","sender":"@carol:chat.test",
               "content":{"membership":"invite"}}]}}},"leave":{"!old":{}}}}
            """#
        let sync = try JSONDecoder().decode(SyncResponse.self, from: Data(json.utf8))
        #expect(sync.nextBatch == "s9" && sync.rooms.join["!dm"]?.timeline.first?.content["body"]?.string == "hi")
        #expect(sync.rooms.join["!dm"]?.previousBatch == "p1" && sync.rooms.join["!dm"]?.notificationCount == 3)
        #expect(sync.rooms.invite["!i"]?.state.first?.sender == "@carol:chat.test" && sync.rooms.leave.keys.sorted() == ["!old"])
        #expect(sync.accountData.first?.type == "m.direct")
    }
}
