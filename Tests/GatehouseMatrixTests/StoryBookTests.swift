import Foundation
import Testing

@testable import GatehouseMatrix

/// A story room's events as stories: only its author's, live for their lifetime then expired, seen by whom, a
/// redacted one gone; the room list keeps story rooms out of the chats.
@Suite struct StoryBookTests {
    static let alice = "@alice:chat.test", bob = "@bob:chat.test", carol = "@carol:chat.test"
    static let day = 86_400_000

    static var room: Room {
        var room = Room(id: "!stories")
        room.applyState(MatrixEvent(type: "m.room.create", eventID: "$c", sender: alice, timestamp: 1, stateKey: "", content: .object(["type": .string(Room.storiesType)])))
        return room
    }

    static func story(_ id: String, by sender: String = alice, ts: Int, redacted: Bool = false) -> MatrixEvent {
        MatrixEvent(
            type: Story.eventType, eventID: id, sender: sender, timestamp: ts, content: redacted ? .object([:]) : .object(["body": .string("story \(id)")]),
            unsigned: redacted ? .object(["redacted_because": .object([:])]) : nil)
    }

    static func seen(_ id: String, by sender: String) -> MatrixEvent {
        MatrixEvent(
            type: Story.seenType, eventID: "$seen-\(id)-\(sender)", sender: sender, timestamp: 5,
            content: .object(["m.relates_to": .object(["rel_type": .string("m.reference"), "event_id": .string(id)])]))
    }

    @Test func liveStoriesOldestFirstWithTheirViewers() {
        let book = StoryBook(
            room: Self.room,
            events: [Self.story("$2", ts: Self.day + 200), Self.story("$1", ts: Self.day + 100), Self.seen("$1", by: Self.bob), Self.seen("$1", by: Self.alice)],
            now: Self.day + 300, lifetime: Self.day)
        #expect(book.live.map(\.id) == ["$1", "$2"])
        // The author's own look is no view.
        #expect(book.live[0].seenBy == [Self.bob])
        #expect(book.hasNew(for: Self.bob) && book.hasNew(for: Self.carol) && !book.hasNew(for: Self.alice))
        let seenAll = StoryBook(
            room: Self.room, events: [Self.story("$1", ts: 100), Self.seen("$1", by: Self.bob)], now: 200, lifetime: Self.day)
        #expect(!seenAll.hasNew(for: Self.bob))
    }

    @Test func aDayLaterAStoryIsExpiredAndARedactedOneIsGone() {
        let events = [Self.story("$old", ts: 1_000), Self.story("$new", ts: Self.day + 500), Self.story("$gone", ts: Self.day + 600, redacted: true)]
        let book = StoryBook(room: Self.room, events: events, now: Self.day + 1_000, lifetime: Self.day)
        #expect(book.live.map(\.id) == ["$new"])
        #expect(book.expired.map(\.id) == ["$old"])
    }

    @Test func onlyTheAuthorsStoriesCountAndTheirTextIsKeptShort() {
        let long = MatrixEvent(type: Story.eventType, eventID: "$long", sender: Self.alice, timestamp: 10, content: .object(["body": .string(String(repeating: "a", count: 2_000))]))
        let book = StoryBook(room: Self.room, events: [Self.story("$bob", by: Self.bob, ts: 10), long], now: 20, lifetime: Self.day)
        #expect(book.live.map(\.id) == ["$long"])
        #expect(book.live[0].body.count == Story.textLimit + 1)
    }

    @Test func storyRoomsAreNotChats() {
        var list = RoomList(me: Self.bob)
        let create = MatrixEvent(type: "m.room.create", eventID: "$c", sender: Self.alice, timestamp: 1, stateKey: "", content: .object(["type": .string(Room.storiesType)]))
        _ = list.apply(
            SyncResponse(
                nextBatch: "s",
                rooms: .init(
                    join: ["!dm": RoomListTests.joined([RoomListTests.member(Self.bob, "join")], [RoomListTests.text("$1", Self.alice, "hi", ts: 5)])],
                    invite: ["!stories": .init(state: [create, RoomListTests.member(Self.bob, "invite", by: Self.alice)])])))
        #expect(list.ordered.map(\.id) == ["!dm"])
        #expect(list.storyRooms.map(\.id) == ["!stories"])
        #expect(list.storyRooms[0].creator == Self.alice && list.storyRooms[0].inviter == Self.alice)
        #expect(list.unreadTotal == 0)
    }
}
