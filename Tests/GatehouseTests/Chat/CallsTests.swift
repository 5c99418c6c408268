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
        try await ChatTests.directChat(synapse, provider: "calls") { pair in
            let (gateway, alice, bob, olive, aliceName, room) = (pair.gateway, pair.alice, pair.bob, pair.olive, pair.aliceName, pair.room)

            // The call's page alone may use the camera and the microphone.
            let page = try await alice.get(Paths.callPage + "?room=" + FormEncoding.escape(room) + "&media=video")
            let policy = page.headers.first(name: "Permissions-Policy") ?? ""
            #expect(page.status == 200 && policy.contains("camera=(self)") && policy.contains("microphone=(self)"), "\(policy)")
            #expect(try await alice.get(Paths.calls).headers.first(name: "Permissions-Policy")?.contains("camera=()") == true)
            #expect(try await alice.get(Paths.chatRoom + "?id=" + FormEncoding.escape(room)).body.contains(#"id="room-call-video""#))

            // Olive, at `sso`: the onboarding prompt, no signal, no ring.
            #expect(try await olive.get(Paths.calls).body.contains(#"id="add-features""#))
            #expect(try await Self.signal(gateway, olive, ["type": "invite", "room": room, "call_id": "c0", "sdp": Self.offer]).status == 403)
            #expect(try await olive.get(Paths.callRing).status == 403)

            // A signal needs the page's token in its header.
            #expect(try await Self.signal(gateway, alice, ["type": "invite", "room": room, "call_id": "c1", "sdp": Self.offer], token: false).status == 403)

            // Alice calls; Bob's ring says who; he declines (the bar's header, which no form sends); she sees it declined.
            #expect(try await Self.signal(gateway, alice, ["type": "invite", "room": room, "call_id": "c1", "sdp": Self.offer]).status == 200)
            let rung = try await ChatTests.streamUntil(gateway, bob, path: Paths.callRing, room: nil, contains: #""id":"c1""#)
            #expect(rung.contains("event: ringing") && rung.contains("Member \(aliceName) is calling you (audio)"), "\(rung)")
            let decline = #"{"decline":"c1"}"#
            let formDecline = try await gateway.send(
                .POST, Paths.callRing, cookies: bob.cookies.values, headers: [("Content-Type", "application/json")], body: decline)
            #expect(formDecline.status == 403)
            let declined = try await gateway.send(
                .POST, Paths.callRing, cookies: bob.cookies.values, headers: [("Content-Type", "application/json"), ("X-Gatehouse-Frame", "1")],
                body: decline)
            #expect(declined.status == 200, "\(declined.body)")
            #expect(try await Self.callsPage(alice) { $0.contains("Audio call, declined") }.contains("Audio call, declined"))

            // Another call, answered; Alice signs out: the gateway hangs it up, and Bob's Calls shows it ended.
            #expect(try await Self.signal(gateway, alice, ["type": "invite", "room": room, "call_id": "c2", "sdp": Self.offer]).status == 200)
            _ = try await ChatTests.streamUntil(gateway, bob, path: Paths.callRing, room: nil, contains: #""id":"c2""#)
            let answer = Self.offer.replacingOccurrences(of: "o=- 1 2", with: "o=- 3 4")
            #expect(try await Self.signal(gateway, bob, ["type": "answer", "room": room, "call_id": "c2", "sdp": answer]).status == 200)
            #expect(try await Self.callsPage(bob) { $0.contains("Audio call in progress") }.contains("Audio call in progress"))
            _ = try await gateway.post(Paths.signOut, form: [("csrf", try await alice.csrf())], cookies: alice.cookies.values, headers: [("Origin", gateway.origin)])
            let ended = try await Self.callsPage(bob) { $0.contains("Incoming audio call · 0:") }
            #expect(ended.contains("Incoming audio call · 0:"), "\(ended)")
        }
    }
}
