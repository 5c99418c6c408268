import Foundation
import Testing

@testable import GatehouseMatrix

/// What the other members do beside writing, as `/sync` tells it: reactions put on and taken back, who is typing, and
/// how far each has read (the "Seen" under the member's latest line). Hostile input from other clients (a reaction of
/// 10,000 emoji, a flood of keys, a reaction to a line about the room, a receipt at an event nobody knows) is bounded
/// or ignored.
@Suite struct TheOtherSideTests {
    static let alice = RoomListTests.alice, bob = RoomListTests.bob, carol = RoomListTests.carol

    static func reaction(_ id: String, by sender: String, to target: String, key: String) -> MatrixEvent {
        let relation: JSONValue = .object(["rel_type": .string("m.annotation"), "event_id": .string(target), "key": .string(key)])
        return MatrixEvent(type: "m.reaction", eventID: id, sender: sender, timestamp: 30, content: .object(["m.relates_to": relation]))
    }

    static func redaction(_ id: String, by sender: String, of target: String) -> MatrixEvent {
        MatrixEvent(type: "m.room.redaction", eventID: id, sender: sender, timestamp: 40, content: .object(["redacts": .string(target)]))
    }

    static func receipt(_ event: String, by users: [String], kind: String = "m.read") -> MatrixEvent {
        let readers = JSONValue.object(Dictionary(uniqueKeysWithValues: users.map { ($0, JSONValue.object(["ts": .number(1)])) }))
        return MatrixEvent(type: "m.receipt", sender: "", content: .object([event: .object([kind: readers])]))
    }

    static func typing(_ users: [String]) -> MatrixEvent {
        MatrixEvent(type: "m.typing", sender: "", content: .object(["user_ids": .array(users.map { .string($0) })]))
    }

    /// A group of three where alice wrote `$a` and bob `$b`, as alice's list has it.
    static func group() -> RoomList {
        var list = RoomList(me: alice)
        _ = list.apply(
            SyncResponse(
                nextBatch: "s1",
                rooms: .init(join: [
                    "!g": RoomListTests.joined(
                        [
                            RoomListTests.member(alice, "join", name: "Alice"), RoomListTests.member(bob, "join", name: "Bob"),
                            RoomListTests.member(carol, "join", name: "Carol"),
                        ],
                        [RoomListTests.text("$b", bob, "from bob", ts: 10), RoomListTests.text("$a", alice, "from alice", ts: 11)])
                ])))
        return list
    }

    static func apply(_ list: inout RoomList, timeline: [MatrixEvent] = [], ephemeral: [MatrixEvent] = []) -> RoomList.Changes {
        list.apply(
            SyncResponse(nextBatch: "s2", rooms: .init(join: ["!g": SyncResponse.JoinedRoom(timeline: timeline, ephemeral: ephemeral)])))
    }

    @Test func reactionsArePutOnTheirLineAndTakenBack() {
        var list = Self.group()
        var changes = Self.apply(
            &list,
            timeline: [
                Self.reaction("$r1", by: Self.bob, to: "$a", key: "👍"), Self.reaction("$r2", by: Self.carol, to: "$a", key: "👍"),
                Self.reaction("$r3", by: Self.carol, to: "$a", key: "🎉"),
                // The same member's same key twice counts once; a reaction to a line about the room, or to an event
                // the room never had, is no reaction shown.
                Self.reaction("$r4", by: Self.bob, to: "$a", key: "👍"), Self.reaction("$r5", by: Self.bob, to: "$m-@bob:chat.test-join-1", key: "👍"),
                Self.reaction("$r6", by: Self.bob, to: "$nowhere", key: "👍"),
            ])
        #expect(changes.reactions == ["!g": ["$a"]])
        #expect(changes.messages.isEmpty, "a reaction is no line of the timeline")
        var entries = list.rooms["!g"]!.reactions["$a"]!.entries
        #expect(entries.map(\.key) == ["👍", "🎉"] && entries[0].senders == [Self.bob, Self.carol] && entries[1].senders == [Self.carol])
        #expect(list.rooms["!g"]!.reactions["$m-@bob:chat.test-join-1"] == nil && list.rooms["!g"]!.reactions["$nowhere"] == nil)
        #expect(list.rooms["!g"]!.reactions["$a"]!.event(of: Self.carol, key: "🎉") == "$r3")

        // Carol takes hers back (her reaction redacted): the line shows bob's alone; the 🎉 is gone.
        changes = Self.apply(&list, timeline: [Self.redaction("$x1", by: Self.carol, of: "$r2"), Self.redaction("$x2", by: Self.carol, of: "$r3")])
        #expect(changes.reactions == ["!g": ["$a"]] && changes.messages.isEmpty)
        entries = list.rooms["!g"]!.reactions["$a"]!.entries
        #expect(entries.map(\.key) == ["👍"] && entries[0].senders == [Self.bob])
        // A deleted line keeps no reactions to be shown (its line says it was deleted).
        changes = Self.apply(&list, timeline: [Self.redaction("$x3", by: Self.alice, of: "$a")])
        #expect(changes.messages["!g"]?.first?.isDeletion == true && list.rooms["!g"]!.reactions["$a"] == nil)
    }

    @Test func hostileReactionsAreBounded() {
        var list = Self.group()
        // 10,000 emoji as one key (about 40 KB) is kept cut; 100 keys on one line keep the first `entryLimit`.
        let flood = String(repeating: "😀", count: 10_000)
        var timeline = [Self.reaction("$big", by: Self.bob, to: "$b", key: flood)]
        for n in 0..<100 { timeline.append(Self.reaction("$k\(n)", by: Self.bob, to: "$a", key: "k\(n)")) }
        _ = Self.apply(&list, timeline: timeline)
        let big = list.rooms["!g"]!.reactions["$b"]!.entries[0].key
        #expect(big.utf8.count <= Reaction.keyLimit && big.hasSuffix("…") && big.hasPrefix("😀"))
        #expect(list.rooms["!g"]!.reactions["$a"]!.entries.count == Reactions.entryLimit)
    }

    @Test(arguments: [
        ("👍", true), ("👨‍👩‍👧‍👦", true), ("🇸🇪", true), ("👍🏽", true), ("+1", true), ("sehr gut", true),
        ("", false), (" 👍", false), ("👍\n", false), ("a\u{0}b", false), ("a\u{2028}b", false),
        (String(repeating: "😀", count: 17), false), (String(repeating: "😀", count: 10_000), false),
        (String(repeating: "é", count: 16), true), (String(repeating: "👨‍👩‍👧‍👦", count: 3), false),
    ])
    func whatTheMemberMaySendAsAReaction(key: String, valid: Bool) {
        #expect(Reaction.isValidKey(key) == valid, "\(key.unicodeScalars.count) scalars")
    }

    @Test func mentionsAreReadAsFarAsTheirLimit() {
        let room = Self.group().rooms["!g"]!
        var content: [String: JSONValue] = ["msgtype": .string("m.text"), "body": .string("all of you")]
        content["m.mentions"] = .object(["user_ids": .array((0..<500).map { .string("@u\($0):chat.test") } + [.string(Self.alice)])])
        let flood = Message(MatrixEvent(type: "m.room.message", eventID: "$f", sender: Self.bob, timestamp: 5, content: .object(content)), in: room)!
        #expect(flood.mentions.count == Message.mentionLimit && !flood.mentions.contains(Self.alice))
        content["m.mentions"] = .object(["user_ids": .array([.string(Self.alice), .number(3)])])
        let one = Message(MatrixEvent(type: "m.room.message", eventID: "$o", sender: Self.bob, timestamp: 5, content: .object(content)), in: room)!
        #expect(one.mentions == [Self.alice])
    }

    @Test func whoIsTypingLeavesTheMemberOut() {
        var list = Self.group()
        var changes = Self.apply(&list, ephemeral: [Self.typing([Self.bob, Self.alice])])
        #expect(changes.typing == ["!g"] && list.typing["!g"] == [Self.bob])
        #expect(changes.rooms.isEmpty, "a key pressed is no change of the room's row")
        // The same again changes nothing; stopping clears it.
        changes = Self.apply(&list, ephemeral: [Self.typing([Self.alice, Self.bob])])
        #expect(changes.typing.isEmpty && changes.isEmpty)
        changes = Self.apply(&list, ephemeral: [Self.typing([])])
        #expect(changes.typing == ["!g"] && list.typing["!g"] == nil)
    }

    @Test func seenByWhoReadUpToTheMembersLatestLine() {
        var list = Self.group()
        #expect(list.seen(in: "!g")?.line == "$a" && list.seen(in: "!g")?.readers == [])
        // Bob read up to his own line (before alice's): not seen. Carol read alice's: seen by one.
        var changes = Self.apply(&list, ephemeral: [Self.receipt("$b", by: [Self.bob]), Self.receipt("$a", by: [Self.carol, Self.alice])])
        #expect(changes.receipts == ["!g"] && changes.rooms.isEmpty)
        #expect(list.seen(in: "!g")?.readers == [Self.carol] && list.receipts["!g"]?[Self.alice] == "$a")
        // Bob reacts and reads up to his reaction, an event that is no line: it stands after alice's line.
        _ = Self.apply(&list, timeline: [Self.reaction("$r", by: Self.bob, to: "$a", key: "👍")])
        changes = Self.apply(&list, ephemeral: [Self.receipt("$r", by: [Self.bob])])
        #expect(list.seen(in: "!g")?.readers == [Self.bob, Self.carol])
        // A receipt at an event the gateway never saw says nothing; another's private receipt is none of the member's.
        _ = Self.apply(&list, ephemeral: [Self.receipt("$unknown", by: [Self.carol]), Self.receipt("$r", by: [Self.bob], kind: "m.read.private")])
        #expect(list.seen(in: "!g")?.readers == [Self.bob])
        // Alice writes again: nobody has seen the new line yet.
        changes = Self.apply(&list, timeline: [RoomListTests.text("$a2", Self.alice, "again", ts: 50)])
        #expect(list.seen(in: "!g")?.line == "$a2" && list.seen(in: "!g")?.readers == [])
    }
}

/// A group as its members change it: who may rename it, set its topic, add, remove and make admins (the room's power
/// levels, the spec's defaults where they are silent), and the lines its changes make in the timeline.
@Suite struct GroupChangesTests {
    static let alice = RoomListTests.alice, bob = RoomListTests.bob, carol = RoomListTests.carol

    static func levels(_ users: [String: Int], extra: [String: JSONValue] = [:]) -> JSONValue {
        var content: [String: JSONValue] = ["users": .object(users.mapValues { .number(Double($0)) })]
        content.merge(extra) { _, new in new }
        return .object(content)
    }

    @Test func whoMayDoWhat() {
        let levels = PowerLevels(Self.levels([Self.alice: 100, Self.bob: 50], extra: ["invite": .number(0), "events": .object(["m.room.name": .number(50)])]))
        #expect(levels.maySet("m.room.name", by: Self.bob) && !levels.maySet("m.room.topic", by: Self.carol) && levels.maySet("m.room.topic", by: Self.bob))
        #expect(levels.mayInvite(Self.carol))
        #expect(levels.mayRemove(Self.carol, by: Self.bob) && !levels.mayRemove(Self.alice, by: Self.bob) && !levels.mayRemove(Self.bob, by: Self.bob))
        #expect(levels.mayMakeAdmin(Self.bob, by: Self.alice) && !levels.mayMakeAdmin(Self.carol, by: Self.bob) && !levels.mayMakeAdmin(Self.alice, by: Self.alice))
        // Levels sent as strings (older rooms) are read; a room with none has its creator as its admin.
        #expect(PowerLevels(.object(["users": .object([Self.bob: .string("100")])])).level(of: Self.bob) == 100)
        // As a homeserver sends them.
        let json = #"{"type":"m.room.power_levels","state_key":"","sender":"@alice:chat.test","content":{"users":{"@alice:chat.test":100},"kick":50,"invite":0,"events":{"m.room.name":50}}}"#
        let decoded = PowerLevels(try! JSONDecoder().decode(MatrixEvent.self, from: Data(json.utf8)).content)
        #expect(decoded.level(of: Self.alice) == 100 && decoded.maySet("m.room.name", by: Self.alice), "\(decoded)")
        // Room version 12: the creators stand above every level, and are in no level's list.
        var hydra = PowerLevels(Self.levels([Self.bob: 100]))
        hydra.creators = [Self.alice]
        #expect(hydra.mayMakeAdmin(Self.carol, by: Self.alice) && !hydra.mayRemove(Self.alice, by: Self.bob) && hydra.mayRemove(Self.bob, by: Self.alice))
        #expect(!hydra.mayMakeAdmin(Self.alice, by: Self.bob))
        var list = RoomList(me: Self.alice)
        let create = MatrixEvent(type: "m.room.create", eventID: "$c", sender: Self.alice, timestamp: 1, stateKey: "", content: .object(["room_version": .string("12")]))
        _ = list.apply(SyncResponse(nextBatch: "s1", rooms: .init(join: ["!g": RoomListTests.joined([create], [])])))
        #expect(list.rooms["!g"]!.levels.level(of: Self.alice) == Int.max)
        let unset = PowerLevels(creator: Self.alice)
        #expect(unset.mayMakeAdmin(Self.bob, by: Self.alice) && !unset.mayRemove(Self.alice, by: Self.bob) && unset.mayInvite(Self.bob))
    }

    @Test func theTimelineSaysWhatChanged() {
        var list = RoomList(me: Self.alice)
        func state(_ type: String, _ id: String, _ content: JSONValue, before: JSONValue? = nil) -> MatrixEvent {
            MatrixEvent(type: type, eventID: id, sender: Self.alice, timestamp: 20, stateKey: "", content: content,
                unsigned: before.map { .object(["prev_content": $0]) })
        }
        let changes = list.apply(
            SyncResponse(
                nextBatch: "s1",
                rooms: .init(join: [
                    "!g": RoomListTests.joined(
                        [RoomListTests.member(Self.alice, "join"), RoomListTests.member(Self.bob, "join")],
                        [
                            state("m.room.power_levels", "$p0", Self.levels([Self.alice: 100])),
                            state("m.room.name", "$n", .object(["name": .string("Lunch crew")])),
                            state("m.room.topic", "$t", .object(["topic": .string(String(repeating: "t", count: 900))])),
                            state("m.room.topic", "$t2", .object(["topic": .string("")])),
                            state("m.room.power_levels", "$p1", Self.levels([Self.alice: 100, Self.bob: 100]), before: Self.levels([Self.alice: 100])),
                            state("m.room.power_levels", "$p2", Self.levels([Self.alice: 100, Self.bob: 50]), before: Self.levels([Self.alice: 100, Self.bob: 100])),
                            // A change of levels that makes nobody an admin or no longer one is no line.
                            state("m.room.power_levels", "$p3", Self.levels([Self.alice: 100, Self.bob: 40]), before: Self.levels([Self.alice: 100, Self.bob: 50])),
                        ])
                ])))
        let lines = changes.messages["!g"] ?? []
        #expect(lines.map(\.id) == ["$n", "$t", "$t2", "$p1", "$p2"] && lines.allSatisfy { $0.kind == .state && !$0.notifies })
        #expect(lines.map(\.change) == ["name", "topic", "topic", "admin", "unadmin"])
        #expect(lines[0].value == "Lunch crew" && lines[1].value?.count == Message.stateValueLimit && lines[2].value == "")
        #expect(lines[3].target == Self.bob && lines[4].target == Self.bob)
        let room = list.rooms["!g"]!
        #expect(room.name == "Lunch crew" && room.topic == "" && room.levels.level(of: Self.bob) == 40)
    }
}
