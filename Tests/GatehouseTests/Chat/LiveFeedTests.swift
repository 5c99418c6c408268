import Foundation
@testable import GatehouseMatrix
import Testing

@testable import Gatehouse

/// The live feed's choices without a homeserver: which of a session's streams notifies, and what a notification says.
@Suite struct LiveFeedTests {
    /// The newest stream on the gateway's host notifies (its tabs are where a room can be in view), else the newest
    /// of all; a closed one hands over; another session's streams are their own.
    @Test func oneStreamOfASessionNotifies() {
        let streams = LiveStreams()
        let app = streams.open(session: "s1", onGateway: false)
        #expect(streams.notifies(app))
        let gateway = streams.open(session: "s1", onGateway: true)
        let laterApp = streams.open(session: "s1", onGateway: false)
        let other = streams.open(session: "s2", onGateway: false)
        #expect(streams.notifies(gateway) && !streams.notifies(app) && !streams.notifies(laterApp) && streams.notifies(other))
        streams.close(gateway)
        #expect(streams.notifies(laterApp) && !streams.notifies(app) && !streams.notifies(gateway))
        streams.close(laterApp)
        streams.close(app)
        #expect(!streams.notifies(app) && streams.notifies(other))
    }

    /// A notification names the sender (and the group, and a mention), says the message's gist, never its markup,
    /// opens the room on the gateway; a muted room and a story room say nothing.
    @Test func whatANotificationSays() throws {
        let strings = try StringsTable.load(directory: "Strings", brand: .init())
        let me = "@alice:chat.test", bob = "@bob:chat.test"
        func member(_ user: String, _ name: String) -> MatrixEvent {
            MatrixEvent(type: "m.room.member", eventID: "$m\(user)", sender: user, timestamp: 1, stateKey: user,
                content: .object(["membership": .string("join"), "displayname": .string(name)]))
        }
        func text(_ id: String, _ body: String, type: String = "m.text") -> MatrixEvent {
            MatrixEvent(type: "m.room.message", eventID: id, sender: bob, timestamp: 5, content: .object(["msgtype": .string(type), "body": .string(body)]))
        }
        let name = MatrixEvent(type: "m.room.name", eventID: "$n", sender: me, timestamp: 1, stateKey: "", content: .object(["name": .string("Team")]))
        var list = RoomList(me: me)
        _ = list.apply(SyncResponse(nextBatch: "s1", rooms: .init(join: [
            "!group": .init(state: [member(me, "Alice"), member(bob, "Bob"), name], notificationCount: 0),
            "!muted": .init(state: [member(me, "Alice"), member(bob, "Bob")], notificationCount: 0),
        ])))
        var mention = SyncResponse.JoinedRoom(timeline: [text("$1", "<b>hi</b> @alice"), text("$2", "waves", type: "m.emote")], notificationCount: 2)
        mention.highlightCount = 1
        let changes = list.apply(SyncResponse(nextBatch: "s2", rooms: .init(join: ["!group": mention])))
        let notices = ChatViews.notices(changes, list, base: "https://gw.test", strings: strings)
        #expect(notices.count == 2)
        #expect(notices[0]["title"] as? String == "\u{2068}Bob\u{2069} mentioned you in \u{2068}Team\u{2069}")
        // The feed carries no text (apps' scripts hear it); a gateway page asks for it.
        #expect(notices.allSatisfy { $0["body"] as? String == "New message" } && notices[0]["kind"] as? String == "mention")
        #expect(notices[0]["url"] as? String == "https://gw.test/chats/room?id=%21group" && notices[0]["id"] as? String == "$1")
        let room = try #require(list.rooms["!group"])
        let lines = mention.timeline.compactMap { Message($0, in: room) }
        #expect(lines.map { ChatViews.noticeText($0, room: room, strings: strings) } == ["<b>hi</b> @alice", "* \u{2068}Bob\u{2069} waves"])

        var muted = RoomList.Changes()
        muted.notifying["!muted"] = [try #require(Message(text("$3", "quiet"), in: list.rooms["!muted"]!))]
        let rules = MatrixEvent(type: "m.push_rules", sender: "", content: .object(["global": .object(["override": .array([
            .object((PushRules.muteRule(room: "!muted").object ?? [:]).merging(["rule_id": .string("!muted")]) { $1 }),
        ])])]))
        _ = list.apply(SyncResponse(nextBatch: "s3", accountData: [rules]))
        #expect(ChatViews.notices(muted, list, base: "", strings: strings).isEmpty)
    }
}
