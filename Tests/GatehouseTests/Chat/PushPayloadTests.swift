import Foundation
import GatehouseCore
import GatehouseMatrix
import Testing

@testable import Gatehouse

/// What a homeserver's push becomes for the service worker: the title a page's notification has, the text only with
/// previews (cut, on one line), the call's own page, an invite; nothing for a count alone, an event of another kind,
/// or ids that are no ids (the push gateway's body is anyone's to send).
@Suite struct PushPayloadTests {
    /// A notification as the homeserver posts it (its fields replaced by `fields`; `NSNull()` takes one out).
    static func notification(_ fields: [String: Any]) throws -> JSONValue {
        var base: [String: Any] = [
            "event_id": "$e1", "room_id": "!room:chat.test", "type": "m.room.message", "sender": "@alice.c5:chat.test",
            "sender_display_name": "Alice Archer", "room_name": "Alice Archer",
            "content": ["msgtype": "m.text", "body": "Lunch at noon?"],
            "devices": [["app_id": MatrixClient.pusherAppID, "pushkey": "k", "tweaks": ["sound": "default"]]],
        ]
        base.merge(fields) { _, new in new }
        return try JSONDecoder().decode(JSONValue.self, from: JSONSerialization.data(withJSONObject: base.filter { !($0.value is NSNull) }))
    }

    static func make(_ notification: JSONValue, previews: Bool = false) throws -> PushPayload.Shown? {
        let strings = try StringsTable.load(directory: "Strings", brand: .init())
        return PushPayload.make(notification, previews: previews, strings: strings, language: "en", base: "https://gw.test")
    }

    @Test func aMessageNamesItsSenderAndKeepsItsTextWithoutPreviews() throws {
        let shown = try #require(try Self.make(try Self.notification([:])))
        #expect(shown == PushPayload.Shown(
            kind: "message", title: "Alice Archer", body: "New message", url: "https://gw.test/chats/room?id=%21room%3Achat.test", tag: "$e1", lang: "en"))
        #expect(try Self.make(try Self.notification([:]), previews: true)?.body == "Lunch at noon?")
        let long = try Self.make(try Self.notification(["content": ["body": "line one\n" + String(repeating: "x", count: 500)]]), previews: true)
        #expect(long?.body.count == PushPayload.textLimit + 1 && long?.body.hasPrefix("line one x") == true && long?.body.hasSuffix("…") == true)
        let emote = try Self.make(try Self.notification(["content": ["msgtype": "m.emote", "body": "waves"]]), previews: true)
        #expect(emote?.body == "* Alice Archer waves")
    }

    @Test func aGroupAndAMentionSaySo() throws {
        let group = try Self.make(try Self.notification(["room_name": "Team"]))
        #expect(group?.title.contains("Team") == true && group?.title.contains("Alice Archer") == true)
        let devices: [[String: Any]] = [["pushkey": "k", "tweaks": ["highlight": true]]]
        let mention = try Self.make(try Self.notification(["devices": devices]))
        #expect(mention?.kind == "mention" && mention?.title.contains("mentioned you") == true)
        // No name from the homeserver: the account's own.
        #expect(try Self.make(try Self.notification(["sender_display_name": NSNull(), "room_name": NSNull()]))?.title == "alice.c5")
    }

    @Test func aCallOpensItsPageAndAnInviteItsRoom() throws {
        let call = try #require(
            try Self.make(try Self.notification(["type": "m.call.invite", "content": ["call_id": "c0ffee01", "offer": ["sdp": "v=0\r\nm=video 9"]]])))
        #expect(call.kind == "call" && call.url == "https://gw.test/calls/call?id=c0ffee01" && call.tag == "c0ffee01")
        #expect(call.body.contains("video"))
        let invite = try #require(
            try Self.make(try Self.notification(["type": "m.room.member", "membership": "invite", "user_is_target": true, "content": ["is_direct": true]])))
        #expect(invite.kind == "invite" && invite.tag == "!room:chat.test")
        // Someone else invited, or a member who joined: nothing to tell.
        #expect(try Self.make(try Self.notification(["type": "m.room.member", "membership": "invite", "user_is_target": false])) == nil)
        #expect(try Self.make(try Self.notification(["type": "m.room.member", "membership": "join", "user_is_target": true])) == nil)
    }

    /// A count alone (a receipt elsewhere), another event type, ids that are no ids, a call id that is none.
    @Test func whatTellsNothingIsNotPushed() throws {
        #expect(try Self.make(JSONDecoder().decode(JSONValue.self, from: Data(#"{"counts": {"unread": 0}, "devices": [{"pushkey": "k"}]}"#.utf8))) == nil)
        #expect(try Self.make(try Self.notification(["type": "m.reaction"])) == nil)
        #expect(try Self.make(try Self.notification(["event_id": "e1"])) == nil)
        #expect(try Self.make(try Self.notification(["room_id": "!x/../../admin"])) == nil)
        #expect(try Self.make(try Self.notification(["type": "m.call.invite", "content": ["call_id": "../x"]])) == nil)
    }
}
