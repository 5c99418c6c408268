import Foundation
import Testing

@testable import GatehouseMatrix

/// A member's calls from their direct chats' `m.call.*` events: ringing, answered, hung up, missed when the invite's
/// lifetime runs out, declined; what a group's or an unknown call's signals do; a hostile lifetime held to a minute.
@Suite struct CallLogTests {
    static let alice = "@alice:chat.test", bob = "@bob:chat.test", carol = "@carol:chat.test"
    static let videoOffer = "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\n"
    static let audioOffer = "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\n"

    static func event(_ type: String, _ sender: String, call: String = "c1", ts: Int, _ extra: [String: JSONValue] = [:]) -> MatrixEvent {
        var content: [String: JSONValue] = ["call_id": .string(call), "version": .string("1"), "party_id": .string(sender == alice ? "ALICEDEV" : "BOBDEV")]
        content.merge(extra) { _, new in new }
        return MatrixEvent(type: "m.call.\(type)", eventID: "$\(type)-\(ts)", sender: sender, timestamp: ts, content: .object(content))
    }

    static func invite(_ sender: String = bob, sdp: String = videoOffer, ts: Int = 1_000, lifetime: Double = 60_000) -> MatrixEvent {
        event("invite", sender, ts: ts, ["offer": .object(["type": .string("offer"), "sdp": .string(sdp)]), "lifetime": .number(lifetime)])
    }

    /// A sync answer with the direct chat of alice and bob (or a group with carol too) and `timeline`.
    static func sync(_ timeline: [MatrixEvent], group: Bool = false) -> SyncResponse {
        var members = [RoomListTests.member(alice, "join", name: "Alice"), RoomListTests.member(bob, "join", name: "Bob", direct: true)]
        if group { members.append(RoomListTests.member(carol, "join", name: "Carol")) }
        return SyncResponse(nextBatch: "s", rooms: .init(join: ["!dm": RoomListTests.joined(members, timeline)]))
    }

    @Test func aCallRingsIsAnsweredAndEndsWithItsTime() {
        var list = RoomList(me: Self.alice)
        let changes = list.apply(Self.sync([Self.invite()]))
        #expect(changes.calls.map(\.kind) == [.invite])
        var call = try! #require(list.calls.calls["c1"])
        #expect(call.media == .video && call.caller == Self.bob && call.callerParty == "BOBDEV")
        #expect(call.phase(at: 30_000) == .ringing)
        #expect(list.calls.ringing(for: Self.alice, at: 30_000).map(\.id) == ["c1"])
        // The caller's own call does not ring for them.
        #expect(list.calls.ringing(for: Self.bob, at: 30_000).isEmpty)
        _ = list.apply(Self.sync([Self.event("answer", Self.alice, ts: 5_000), Self.event("hangup", Self.bob, ts: 65_000, ["reason": .string("user_hangup")])]))
        call = try! #require(list.calls.calls["c1"])
        #expect(call.phase(at: 100_000) == .ended)
        #expect(call.duration(at: 100_000) == 60_000)
        #expect(call.answererParty == "ALICEDEV" && call.involves(party: "ALICEDEV"))
        #expect(list.calls.ringing(for: Self.alice, at: 6_000).isEmpty)
    }

    @Test func anUnansweredCallIsMissedWhenItsLifetimeRunsOutOrTheCallerGivesUp() {
        var list = RoomList(me: Self.alice)
        _ = list.apply(Self.sync([Self.invite(sdp: Self.audioOffer)]))
        let call = try! #require(list.calls.calls["c1"])
        #expect(call.media == .audio)
        #expect(call.phase(at: 60_999) == .ringing)
        #expect(call.phase(at: 61_000) == .missed)
        _ = list.apply(Self.sync([Self.event("hangup", Self.bob, ts: 20_000, ["reason": .string("invite_timeout")])]))
        #expect(list.calls.calls["c1"]?.phase(at: 21_000) == .missed)
        #expect(list.calls.calls["c1"]?.duration(at: 21_000) == nil)
    }

    @Test func aDeclinedCallAndAnAnswerFromTheCallerThemself() {
        var list = RoomList(me: Self.alice)
        // The caller's own "answer" is no answer; the callee's reject declines.
        _ = list.apply(Self.sync([Self.invite(), Self.event("answer", Self.bob, ts: 2_000), Self.event("reject", Self.alice, ts: 3_000)]))
        #expect(list.calls.calls["c1"]?.phase(at: 4_000) == .declined)
        #expect(list.calls.calls["c1"]?.answeredAt == nil)
    }

    @Test func aHostileLifetimeRingsAMinuteAtMost() {
        var list = RoomList(me: Self.alice)
        _ = list.apply(Self.sync([Self.invite(lifetime: 86_400_000)]))
        #expect(list.calls.calls["c1"]?.lifetime == Call.longestRing)
        #expect(list.calls.calls["c1"]?.phase(at: 1_000 + Call.longestRing) == .missed)
    }

    @Test func callsInAGroupAndSignalsOfUnknownCallsAreNotCalls() {
        var list = RoomList(me: Self.alice)
        let changes = list.apply(Self.sync([Self.invite()], group: true))
        #expect(changes.calls.isEmpty && list.calls.calls.isEmpty)
        var direct = RoomList(me: Self.alice)
        let unknown = direct.apply(Self.sync([Self.event("answer", Self.bob, call: "nobody", ts: 1)]))
        #expect(unknown.calls.isEmpty && direct.calls.calls.isEmpty)
        // A call event without a call id is nothing at all.
        let bare = MatrixEvent(type: "m.call.invite", eventID: "$x", sender: Self.bob, timestamp: 1, content: .object([:]))
        #expect(CallSignal(bare, room: "!dm") == nil)
    }

    @Test func candidatesAreKeptPerPartyForAPageThatOpensLate() {
        var list = RoomList(me: Self.alice)
        let candidate: JSONValue = .object(["candidate": .string("candidate:1 1 udp 1 127.0.0.1 50000 typ relay"), "sdpMid": .string("0")])
        _ = list.apply(Self.sync([Self.invite(), Self.event("candidates", Self.bob, ts: 1_100, ["candidates": .array([candidate, candidate])])]))
        #expect(list.calls.calls["c1"]?.candidates["BOBDEV"]?.count == 2)
    }

    @Test func theTimelineShowsAStartAMissedCallAndADeclinedOne() {
        var room = Room(id: "!dm")
        room.members = [Self.alice: .init(membership: "join", displayName: "Alice"), Self.bob: .init(membership: "join", displayName: "Bob")]
        #expect(Message(Self.invite(), in: room)?.call == "video")
        #expect(Message(Self.event("hangup", Self.bob, ts: 2, ["reason": .string("invite_timeout")]), in: room)?.call == "missed")
        #expect(Message(Self.event("hangup", Self.bob, ts: 2), in: room)?.call == "ended")
        #expect(Message(Self.event("reject", Self.alice, ts: 2), in: room)?.call == "declined")
        #expect(Message(Self.event("candidates", Self.bob, ts: 2), in: room) == nil)
    }
}
