import Foundation
import GatehouseCore
import GatehouseMatrix
import Testing

@testable import Gatehouse

/// What a call's page may send and receive: the gateway writes the event's fixed parts itself, refuses what is not a
/// signal, and lets no ICE candidate outside the allowed networks through, in an SDP or on its own, either way.
@Suite struct CallSignallingTests {
    static let loopback = CallSignalling(networks: [IPNetwork("127.0.0.0/8")!, IPNetwork("::1/128")!])
    static let offer = "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\n"

    static func json(_ object: [String: JSONValue]) -> JSONValue { .object(object) }

    @Test func anInviteIsWrittenByTheGateway() throws {
        let sent = try Self.loopback.outgoing(
            Self.json([
                "type": .string("invite"), "room": .string("!dm:chat.test"), "call_id": .string("c1"), "sdp": .string(Self.offer),
                // What the page may not choose: ignored.
                "lifetime": .number(1e12), "party_id": .string("SOMEONEELSE"), "version": .string("0"),
            ]), party: "MYDEVICE")
        #expect(sent.eventType == "m.call.invite" && sent.room == "!dm:chat.test")
        #expect(sent.content["party_id"]?.string == "MYDEVICE" && sent.content["version"]?.string == "1")
        #expect(sent.content["lifetime"]?.int == 60_000)
        #expect(sent.content["offer"]?["sdp"]?.string == Self.offer && sent.content["offer"]?["type"]?.string == "offer")
    }

    @Test(arguments: [
        // Not a signal, or not for a room, or a hostile call id.
        ["type": "negotiate", "room": "!dm:chat.test", "call_id": "c1"],
        ["type": "m.room.message", "room": "!dm:chat.test", "call_id": "c1"],
        ["type": "hangup", "room": "dm", "call_id": "c1"],
        ["type": "hangup", "room": "!dm:chat.test", "call_id": "<script>"],
        ["type": "hangup", "room": "!dm:chat.test", "call_id": String(repeating: "a", count: 65)],
        ["type": "hangup", "room": "!dm:chat.test", "call_id": "c1", "reason": "<img src=x>"],
        ["type": "select_answer", "room": "!dm:chat.test", "call_id": "c1", "selected_party_id": "a b"],
        // Not a session description.
        ["type": "answer", "room": "!dm:chat.test", "call_id": "c1", "sdp": "<html>"],
        ["type": "answer", "room": "!dm:chat.test", "call_id": "c1", "sdp": "v=0\r\n" + String(repeating: "a", count: 70_000)],
        // A candidate outside loopback, in the SDP or on its own; one that is not a candidate line.
        ["type": "invite", "room": "!dm:chat.test", "call_id": "c1", "sdp": offer + "a=candidate:1 1 udp 2122260223 192.0.2.10 50000 typ host\r\n"],
        ["type": "invite", "room": "!dm:chat.test", "call_id": "c1", "sdp": offer + "a=candidate:1 1 udp 2122260223 abcd.local 50000 typ host\r\n"],
        ["type": "invite", "room": "!dm:chat.test", "call_id": "c1", "sdp": offer + "a=candidate:garbage\r\n"],
    ])
    func whatIsNotASignalIsRefused(fields: [String: String]) {
        #expect(throws: ChatError.self) { try Self.loopback.outgoing(.object(fields.mapValues(JSONValue.string)), party: "D") }
    }

    @Test func candidatesAreCheckedOneByOne() throws {
        func candidates(_ lines: [String]) -> JSONValue {
            Self.json([
                "type": .string("candidates"), "room": .string("!dm:chat.test"), "call_id": .string("c1"),
                "candidates": .array(lines.map { .object(["candidate": .string($0), "sdpMid": .string("0"), "sdpMLineIndex": .number(0)]) }),
            ])
        }
        let relayed = "candidate:2 1 udp 58597375 127.0.0.1 49182 typ relay raddr 0.0.0.0 rport 0 generation 0"
        let sent = try Self.loopback.outgoing(candidates([relayed, ""]), party: "D")
        #expect(sent.content["candidates"]?.array?.count == 2)
        #expect(throws: ChatError.self) { try Self.loopback.outgoing(candidates([relayed, "candidate:3 1 udp 1 10.0.0.1 9 typ host"]), party: "D") }
        #expect(throws: ChatError.self) { try Self.loopback.outgoing(candidates([]), party: "D") }
        #expect(throws: ChatError.self) { try Self.loopback.outgoing(candidates(Array(repeating: relayed, count: 51)), party: "D") }
        // With no networks set, any well-formed address but this host's, the link's and multicast, and a browser's own
        // `.local` name (a UUID), go; a name to resolve never does.
        let anywhere = CallSignalling(networks: [])
        #expect(throws: Never.self) {
            try anywhere.outgoing(candidates(["candidate:3 1 udp 1 3f1c2b4a-5d6e-4f70-8a9b-0c1d2e3f4a5b.local 9 typ host"]), party: "D")
        }
        for refused in ["abcd-1234.local", "intranet.example", "169.254.169.254", "127.0.0.1", "::ffff:127.0.0.1", "fe80::1", "224.0.0.251"] {
            #expect(throws: ChatError.self, "\(refused)") { try anywhere.outgoing(candidates(["candidate:3 1 udp 1 \(refused) 9 typ host"]), party: "D") }
        }
    }

    @Test func whatThePageReceivesHasNoCandidateOutsideTheNetworks() throws {
        let event = MatrixEvent(
            type: "m.call.candidates", eventID: "$c", sender: "@bob:chat.test", timestamp: 1,
            content: .object([
                "call_id": .string("c1"), "party_id": .string("BOB"),
                "candidates": .array([
                    .object(["candidate": .string("candidate:1 1 udp 1 10.1.2.3 9 typ host")]),
                    .object(["candidate": .string("candidate:2 1 udp 1 127.0.0.1 9 typ relay"), "sdpMid": .string("0")]),
                ]),
            ]))
        let signal = try #require(CallSignal(event, room: "!dm:chat.test"))
        let told = try #require(Self.loopback.incoming(signal))
        let list = try #require(told["candidates"] as? [[String: Any]])
        #expect(list.count == 1 && (list[0]["candidate"] as? String)?.contains("127.0.0.1") == true)
        // Only addresses outside: nothing to tell. An offer with one: not told either.
        var outside = event
        outside.content = .object(["call_id": .string("c1"), "candidates": .array([.object(["candidate": .string("candidate:1 1 udp 1 10.1.2.3 9 typ host")])])])
        #expect(Self.loopback.incoming(try #require(CallSignal(outside, room: "!dm"))) == nil)
        let invite = MatrixEvent(
            type: "m.call.invite", eventID: "$i", sender: "@bob:chat.test", timestamp: 1,
            content: .object([
                "call_id": .string("c1"), "offer": .object(["sdp": .string(Self.offer + "a=candidate:1 1 udp 1 10.1.2.3 9 typ host\r\n")]),
            ]))
        // An offer with one is told without it.
        let inviteSignal = try #require(CallSignal(invite, room: "!dm"))
        let toldOffer = try #require(Self.loopback.incoming(inviteSignal)?["sdp"] as? String)
        #expect(toldOffer == Self.offer)
    }

    /// Every SDP a page is given (an offer on the call's page or live, an answer, a renegotiation) passes one filter:
    /// candidates for private, link-local, metadata, unique-local and mapped addresses and for names to resolve are
    /// left out, the rest kept as it came.
    @Test(arguments: [
        "10.0.0.7", "192.168.1.20", "172.16.0.1", "169.254.169.254", "fd00::1", "::ffff:10.0.0.1", "::ffff:169.254.169.254",
        "intranet.example", "3f1c2b4a-5d6e-4f70-8a9b-0c1d2e3f4a5b.local", "2001:db8::1", "0.0.0.0",
    ])
    func noSessionDescriptionReachesAPageWithAHostileCandidate(address: String) throws {
        let kept = "a=candidate:2 1 udp 58597375 127.0.0.1 49182 typ relay raddr 0.0.0.0 rport 0\r\n"
        let hostile = "a=candidate:1 1 udp 2122260223 \(address) 50000 typ host generation 0\r\n"
        let sdp = Self.offer + hostile + kept + "a=end-of-candidates\r\n"
        let expected = Self.offer + kept + "a=end-of-candidates\r\n"
        #expect(Self.loopback.forPage(sdp: sdp) == expected)
        for (type, key) in [("m.call.invite", "offer"), ("m.call.answer", "answer"), ("m.call.negotiate", "description")] {
            let event = MatrixEvent(
                type: type, eventID: "$e", sender: "@mallory:chat.test", timestamp: 1,
                content: .object(["call_id": .string("c1"), "party_id": .string("M"), key: .object(["type": .string("offer"), "sdp": .string(sdp)])]))
            let signal = try #require(CallSignal(event, room: "!dm:chat.test"), "\(type)")
            let told = try #require(Self.loopback.incoming(signal), "\(type)")
            #expect(told["sdp"] as? String == expected, "\(type)")
        }
        // Where any address is allowed, what is never allowed still goes (names to resolve, the link, this host).
        let anywhere = CallSignalling(networks: []).forPage(sdp: sdp) ?? ""
        let neverAnywhere = ["169.254.169.254", "::ffff:169.254.169.254", "intranet.example", "0.0.0.0"]
        #expect(anywhere.contains(address) == !neverAnywhere.contains(address), "\(address)")
    }
}
