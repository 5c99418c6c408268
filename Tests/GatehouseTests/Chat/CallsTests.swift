import AsyncHTTPClient
import Foundation
import GatehouseCore
import Testing

@testable import Gatehouse

/// Calls' signalling through the gateway against a real Synapse, without browsers (Tests/e2e/test_calls.py has the
/// media): the call's page alone may use the camera and microphone; a member at `sso` can neither call nor be rung;
/// a call rings on the callee's ring stream with the caller's name; declining needs the bar's header and ends it as
/// declined for the caller; a call ends for the other member when the caller's session ends.
@Suite(.serialized) struct CallsTests {
    typealias Member = UpgradeFlowTests.Member
    static let offer = "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\n"

    /// A signal as a call's page posts it (its token in `X-Gatehouse-CSRF`, unless `token` is `false`).
    static func signal(_ gateway: LiveGateway, _ member: Member, _ body: [String: String], token: Bool = true) async throws -> LiveGateway.Reply {
        let json = String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self)
        var headers = [("Content-Type", "application/json"), ("Accept", "application/json")]
        if token { headers.append(("X-Gatehouse-CSRF", try await member.csrf())) }
        return try await gateway.send(.POST, Paths.callSignal, cookies: member.cookies.values, headers: headers, body: json)
    }

    /// Until `condition` holds for the member's Calls page (its text), for up to 20 seconds.
    static func callsPage(_ member: Member, until condition: (String) -> Bool) async throws -> String {
        var body = ""
        for _ in 0..<80 {
            body = try await member.get(Paths.calls).body
            if condition(body) { return body }
            try await Task.sleep(for: .milliseconds(250))
        }
        return body
    }

    @Test func aCallRingsIsDeclinedAndEndsWithTheCallersSession() async throws {
        let synapse = try await TestSynapse.shared.value
        // Candidates only on loopback, as the TURN server's relays are in the tests.
        let loopback = [IPNetwork("127.0.0.0/8")!, IPNetwork("::1/128")!]
        try await ChatTests.directChat(synapse, provider: "calls", callNetworks: loopback) { pair in
            let (gateway, alice, bob, olive, aliceName, room) = (pair.gateway, pair.alice, pair.bob, pair.olive, pair.aliceName, pair.room)

            // The call's page alone may use the camera and the microphone.
            let page = try await alice.get(Paths.callPage + "?room=" + FormEncoding.escape(room) + "&media=video")
            let policy = page.headers.first(name: "Permissions-Policy") ?? ""
            #expect(page.status == 200 && policy.contains("camera=(self)") && policy.contains("microphone=(self)"), "\(policy)")
            #expect(try await alice.get(Paths.calls).headers.first(name: "Permissions-Policy")?.contains("camera=()") == true)
            #expect(try await alice.get(Paths.chatRoom + "?id=" + FormEncoding.escape(room)).body.contains(#"id="room-call-video""#))

            // A GET never places a call: the call's address without the form's grant (another site navigating the
            // member's window there), with a forged, stale or other call's grant, only offers the call.
            #expect(page.body.contains(#"data-state="offered""#) && page.body.contains(#"id="call-place""#) && !page.body.contains(#"id="remote-video""#))
            let started = try await alice.post(Paths.callStart, [("room", room), ("media", "video")])
            let placed = try #require(started.location)
            #expect(started.status == 303 && placed.contains("place="))
            #expect(try await alice.get(placed).body.contains(#"data-state="starting""#))
            let grant = try #require(placed.split(separator: "place=").last.map(String.init))
            let now = Date()
            let forged = [
                "", "x", "\(Int(now.timeIntervalSince1970) + 30).AAAA", CallPlacement.grant(room: room, media: .video, key: "another session", now: now),
                CallPlacement.grant(room: room, media: .video, key: "k", now: now.addingTimeInterval(-120)),
            ]
            for hostile in forged {
                let offered = try await alice.get(Paths.callPage + "?room=" + FormEncoding.escape(room) + "&media=video&place=" + FormEncoding.escape(hostile))
                #expect(offered.body.contains(#"data-state="offered""#), "\(hostile)")
            }
            // The grant is for one room and one kind of call: audio with a video call's grant is only offered.
            #expect(try await alice.get(Paths.callPage + "?room=" + FormEncoding.escape(room) + "&media=audio&place=" + grant).body.contains(#"data-state="offered""#))
            // And a GET of it from another session is offered too (the grant is signed with the session's own secret).
            #expect(try await bob.get(placed).body.contains(#"data-state="offered""#))

            // Olive, at `sso`: the onboarding prompt, no signal, no ring.
            #expect(try await olive.get(Paths.calls).body.contains(#"id="add-features""#))
            #expect(try await Self.signal(gateway, olive, ["type": "invite", "room": room, "call_id": "c0", "sdp": Self.offer]).status == 403)
            #expect(try await olive.get(Paths.live).status == 403)

            // The TURN credentials need the page's token too: none, or another's, is refused.
            for headers in [[("Accept", "application/json")], [("Accept", "application/json"), ("X-Gatehouse-CSRF", "forged")]] {
                #expect(try await gateway.get(Paths.callServers, cookies: alice.cookies.values, headers: headers).status == 403)
            }
            #expect(try await alice.get(Paths.callServers, json: true).status != 403)

            // A signal needs the page's token in its header.
            #expect(try await Self.signal(gateway, alice, ["type": "invite", "room": room, "call_id": "c1", "sdp": Self.offer], token: false).status == 403)

            // Alice calls; Bob's ring says who; he declines (the bar's header, which no form sends); she sees it declined.
            #expect(try await Self.signal(gateway, alice, ["type": "invite", "room": room, "call_id": "c1", "sdp": Self.offer]).status == 200)
            let rung = try await ChatTests.streamUntil(gateway, bob, path: Paths.live, room: nil, contains: #""id":"c1""#)
            #expect(rung.contains("event: ringing") && rung.contains("\u{2068}Member \(aliceName)\u{2069} is calling you (audio)"), "\(rung)")
            let decline = #"{"decline":"c1"}"#
            let formDecline = try await gateway.send(
                .POST, Paths.live, cookies: bob.cookies.values, headers: [("Content-Type", "application/json")], body: decline)
            #expect(formDecline.status == 403)
            let declined = try await gateway.send(
                .POST, Paths.live, cookies: bob.cookies.values, headers: [("Content-Type", "application/json"), ("X-Gatehouse-Frame", "1")],
                body: decline)
            #expect(declined.status == 200, "\(declined.body)")
            #expect(try await Self.callsPage(alice) { $0.contains("Audio call, declined") }.contains("Audio call, declined"))

            // Alice's own Matrix client (a token of the homeserver's, past the gateway) invites with an offer naming
            // private, link-local, metadata, unique-local and mapped addresses and a name to resolve: Bob's call page
            // gets the offer without them, the relayed candidate kept.
            let aliceID = "@\(aliceName):\(TestSynapse.serverName)"
            let token = try #require(try await synapse.admin(.POST, "/_synapse/admin/v1/users/\(aliceID)/login", json: [:]).json["access_token"] as? String)
            let hostile = ["10.0.0.7", "192.168.1.20", "169.254.169.254", "fd00::1", "::ffff:10.0.0.1", "intranet.example"]
                .enumerated().map { "a=candidate:\($0.offset) 1 udp 2122260223 \($0.element) 50000 typ host\r\n" }.joined()
            let relayed = "a=candidate:9 1 udp 58597375 127.0.0.1 49182 typ relay raddr 0.0.0.0 rport 0\r\n"
            let invite: [String: Any] = [
                "call_id": "h1", "party_id": "ALICEOWN", "version": "1", "lifetime": 60000,
                "offer": ["type": "offer", "sdp": Self.offer + hostile + relayed],
            ]
            #expect(try await synapse.call(.PUT, "/_matrix/client/v3/rooms/\(room)/send/m.call.invite/h1", json: invite, token: token).status == 200)
            _ = try await ChatTests.streamUntil(gateway, bob, path: Paths.live, room: nil, contains: #""id":"h1""#)
            let answering = try await bob.get(Paths.callPage + "?id=h1").body
            let offered = try #require(answering.firstMatch(of: /data-offer="([^"]*)"/)?.1)
            #expect(offered.contains("127.0.0.1 49182 typ relay"), "\(offered)")
            for address in ["10.0.0.7", "192.168.1.20", "169.254.169.254", "fd00::1", "::ffff:10.0.0.1", "intranet.example"] {
                #expect(!offered.contains(address), "\(address)")
            }

            // Another call, answered; Alice signs out: the gateway hangs it up, and Bob's Calls shows it ended.
            #expect(try await Self.signal(gateway, alice, ["type": "invite", "room": room, "call_id": "c2", "sdp": Self.offer]).status == 200)
            _ = try await ChatTests.streamUntil(gateway, bob, path: Paths.live, room: nil, contains: #""id":"c2""#)
            let answer = Self.offer.replacingOccurrences(of: "o=- 1 2", with: "o=- 3 4")
            #expect(try await Self.signal(gateway, bob, ["type": "answer", "room": room, "call_id": "c2", "sdp": answer]).status == 200)
            #expect(try await Self.callsPage(bob) { $0.contains("Audio call in progress") }.contains("Audio call in progress"))
            _ = try await gateway.post(Paths.signOut, form: [("csrf", try await alice.csrf())], cookies: alice.cookies.values, headers: [("Origin", gateway.origin)])
            let ended = try await Self.callsPage(bob) { $0.contains("Incoming audio call · 0:") }
            #expect(ended.contains("Incoming audio call · 0:"), "\(ended)")
        }
    }
}
