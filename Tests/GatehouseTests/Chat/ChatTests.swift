import AsyncHTTPClient
import Foundation
import GatehouseCore
import NIOCore
import Testing

@testable import Gatehouse
@testable import GatehouseStorage

/// The gateway's own chat against a real Synapse homeserver (its JWT login): two members who upgraded chat through
/// the gateway, live; each session's device is the member's own, sealed at rest, logged out at sign-out; a member at
/// `sso` gets no Matrix session by any route; hostile text stays text; another member's room stays closed.
@Suite(.serialized) struct ChatTests {
    typealias Member = UpgradeFlowTests.Member

    static func live<T>(_ synapse: TestSynapse, _ body: (LiveGateway) async throws -> T) async throws -> T {
        try await UpgradeFlowTests.live(configure: { configuration in
            configuration.registration.chat = synapse.chatWithSessions
        }) { gateway in try await body(gateway) }
    }

    /// The room a redirect names (`/chats/room?id=!…`).
    static func room(of reply: LiveGateway.Reply) throws -> String {
        let location = try #require(reply.location)
        let id = try #require(URLComponents(string: location)?.queryItems?.first { $0.name == "id" }?.value)
        return id
    }

    /// Reads the member's event stream (the chat's, or another at `path`) until `text` arrives (or `seconds` pass): what
    /// it read.
    static func streamUntil(
        _ gateway: LiveGateway, _ member: Member, path: String = Paths.chatEvents, room: String?, contains text: String, seconds: Int64 = 20
    ) async throws -> String {
        // The page's token in the query, as the chat's script sends it (an `EventSource` sends no header of its own).
        let query = (room.map { ["room=" + FormEncoding.escape($0)] } ?? []) + (path == Paths.chatEvents ? ["csrf=" + (try await member.csrf())] : [])
        var request = HTTPClientRequest(url: gateway.origin + path + (query.isEmpty ? "" : "?" + query.joined(separator: "&")))
        request.headers.add(name: "Cookie", value: member.cookies.values.map { "\($0)=\($1)" }.joined(separator: "; "))
        request.headers.add(name: "Accept", value: "text/event-stream")
        // A client of its own, whose shutdown closes the stream (as a page going away does).
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        // The whole read is bounded (the request's timeout bounds its head alone): the client shut down ends it.
        let watchdog = Task {
            try await Task.sleep(for: .seconds(seconds))
            try? await client.shutdown()
        }
        var read = ""
        do {
            let response = try await client.execute(request, timeout: .seconds(seconds))
            #expect(response.status.code == 200 && response.headers.first(name: "Content-Type")?.hasPrefix("text/event-stream") == true)
            for try await chunk in response.body {
                read += String(buffer: chunk)
                if read.contains(text) { break }
            }
        } catch {}
        watchdog.cancel()
        try? await client.shutdown()
        return read
    }

    /// Alice and Bob registered with a direct chat Bob joined, and Olive signed in at `sso`, on a gateway whose
    /// accounts are linked under `provider` (a test's own: the development members' subjects are the same in every
    /// test on the shared homeserver).
    struct DirectChat {
        let gateway: LiveGateway
        let alice: Member, bob: Member, olive: Member
        let aliceName: String, bobName: String
        let room: String
    }

    static func directChat<T>(
        _ synapse: TestSynapse, provider: String, callNetworks: [IPNetwork] = [], push: PushConfiguration = .init(),
        _ body: (DirectChat) async throws -> T
    ) async throws -> T {
        var chat = synapse.chatWithSessions
        chat.authProvider = provider
        chat.callNetworks = callNetworks
        chat.push = push
        return try await UpgradeFlowTests.live(configure: { $0.registration.chat = chat }) { gateway in
            let alice = try await Member.signIn(gateway, as: "alice")
            let bob = try await Member.signIn(gateway, as: "bob")
            let olive = try await Member.signIn(gateway, as: "olive")
            let aliceName = SynapseChatTests.unique("alice"), bobName = SynapseChatTests.unique("bob")
            _ = try await alice.register(username: aliceName)
            _ = try await bob.register(username: bobName, phone: "+15550100002")
            let room = try Self.room(of: try await alice.post(Paths.chatDirect, [("username", bobName)]))
            _ = try await Self.streamUntil(gateway, bob, room: nil, contains: room)
            #expect(try await bob.post(Paths.chatMembership, [("room", room), ("action", "join")]).status == 303)
            return try await body(
                DirectChat(gateway: gateway, alice: alice, bob: bob, olive: olive, aliceName: aliceName, bobName: bobName, room: room))
        }
    }

    static func devices(_ synapse: TestSynapse, _ userID: String) async throws -> [[String: Any]] {
        try await synapse.admin(.GET, "/_synapse/admin/v2/users/\(userID)/devices").json["devices"] as? [[String: Any]] ?? []
    }

    @Test func twoMembersWhoUpgradedChatLiveThroughTheGateway() async throws {
        let synapse = try await TestSynapse.shared.value
        try await Self.live(synapse) { gateway in
            let alice = try await Member.signIn(gateway, as: "alice")
            let bob = try await Member.signIn(gateway, as: "bob")
            let aliceName = SynapseChatTests.unique("alice"), bobName = SynapseChatTests.unique("bob")
            #expect(try await alice.register(username: aliceName).location?.hasPrefix(Paths.upgradeDone) == true)
            #expect(try await bob.register(username: bobName, phone: "+15550100002").location?.hasPrefix(Paths.upgradeDone) == true)
            let aliceID = "@\(aliceName):\(TestSynapse.serverName)", bobID = "@\(bobName):\(TestSynapse.serverName)"

            // Chats is the gateway's own: the list, empty so far, saying that chats are not end-to-end encrypted.
            let empty = try await alice.get(Paths.chats)
            #expect(empty.status == 200 && empty.body.contains(#"id="chat-start""#) && empty.body.contains(#"id="no-rooms""#))
            #expect(empty.body.contains("not end-to-end encrypted"))

            // Alice finds Bob by his username and opens the direct chat; Bob is invited.
            let found = try await alice.get(Paths.chatNew + "?q=" + bobName)
            #expect(found.body.contains("@\(bobName)") && !found.body.contains("@\(aliceName)<"))
            let opened = try await alice.post(Paths.chatDirect, [("username", bobName)])
            #expect(opened.status == 303, "\(opened.body.suffix(800))")
            let room = try Self.room(of: opened)
            // Asking again opens the same chat.
            #expect(try Self.room(of: try await alice.post(Paths.chatDirect, [("username", bobName)])) == room)

            // Bob sees the invite live, and on his list with Accept and Decline.
            let invited = try await Self.streamUntil(gateway, bob, room: nil, contains: room)
            // (Its row as the list renders it, with the invite's Accept and the session's token.)
            #expect(invited.contains("event: rooms") && invited.contains(#"class=\"room invite\""#) && invited.contains(#"value=\"join\""#), "\(invited.suffix(1500))")
            let list = try await bob.get(Paths.chats).body
            #expect(list.contains(#"data-room="\#(room)""#) && list.contains(#"value="join""#) && list.contains(#"value="decline""#))
            let joined = try await bob.post(Paths.chatMembership, [("room", room), ("action", "join")])
            #expect(joined.status == 303, "\(room) \(joined.status)")
            #expect(try Self.room(of: joined) == room)

            // Alice writes; Bob's open room page gets it without a reload, and his pages' live feed tells him of it.
            async let heard = Self.streamUntil(gateway, bob, room: room, contains: "Hello Bob")
            async let told = Self.streamUntil(gateway, bob, path: Paths.live, room: nil, contains: "event: notify")
            try await Task.sleep(for: .milliseconds(500))
            let sent = try await gateway.post(
                Paths.chatSend, form: [("csrf", try await alice.csrf()), ("room", room), ("text", "Hello Bob 👋"), ("txn", "t1")],
                cookies: alice.cookies.values, headers: [("Origin", gateway.origin), ("Accept", "application/json")])
            #expect(sent.status == 200 && sent.body.contains(#""event_id":"$"#))
            let live = try await heard
            #expect(live.contains("event: message") && live.contains("Hello Bob 👋"), "\(live.suffix(2000))")
            // The feed, heard where apps' scripts run too, names the sender but carries no text; a gateway page asks for
            // the text with its token.
            let notice = try await told
            #expect(notice.contains("event: unread") && notice.contains(#""kind":"message""#) && notice.contains(#""body":"New message""#), "\(notice.suffix(1500))")
            #expect(!notice.contains("Hello Bob") && notice.contains(#""url":"http:\/\/"#) && notice.contains(#"\/chats\/room?id="#), "\(notice.suffix(800))")
            let noticedID = try #require(notice.firstMatch(of: /"id":"(\$[^"]+)"/)?.1)
            let noticePath = Paths.chatNotice + "?room=" + FormEncoding.escape(room) + "&id=" + FormEncoding.escape(String(noticedID))
            let text = try await gateway.get(noticePath, cookies: bob.cookies.values, headers: [("X-Gatehouse-CSRF", try await bob.csrf()), ("Accept", "application/json")])
            #expect(text.status == 200 && text.body.contains("Hello Bob 👋"), "\(text.status) \(text.body)")
            #expect(try await gateway.get(noticePath, cookies: bob.cookies.values, headers: [("Accept", "application/json")]).status == 403)
            let badID = Paths.chatNotice + "?room=" + FormEncoding.escape(room) + "&id=notanevent"
            #expect(try await gateway.get(badID, cookies: bob.cookies.values, headers: [("X-Gatehouse-CSRF", try await bob.csrf()), ("Accept", "application/json")]).status == 400)
            // Bob's page shows it, and his list counts it unread until he reads it.
            let page = try await bob.get(Paths.chatRoom + "?id=" + FormEncoding.escape(room)).body
            #expect(page.contains("Hello Bob 👋") && page.contains(#"id="composer""#))
            // Loading the page sends nothing (another site could load it): the read marker is the page's script's, and
            // until it is sent the message stays unread.
            try await Task.sleep(for: .seconds(1))
            #expect(try await bob.get(Paths.chatUnread, json: true).body.contains(#""unread":1"#))
            let eventID = try #require(page.matches(of: /data-id="(\$[^"]+)"/).last?.1)
            #expect(try await bob.post(Paths.chatRead, [("room", room), ("event", String(eventID))]).status == 200)

            // Read up to the latest line, the count is none.
            var readCount = ""
            for _ in 0..<40 where !readCount.contains(#""unread":0"#) {
                readCount = try await bob.get(Paths.chatUnread, json: true).body
                try await Task.sleep(for: .milliseconds(250))
            }
            #expect(readCount.contains(#""unread":0"#), "\(readCount)")
            // Bob mutes the chat (a push rule, as Element mutes): Alice's next message reaches his page but tells him of
            // nothing and is not counted; unmuted, it is as before.
            #expect(try await bob.post(Paths.chatMute, [("room", room), ("muted", "1")]).status == 303)
            #expect(try await bob.get(Paths.chatRoom + "?id=" + FormEncoding.escape(room)).body.contains(#"id="room-muted-note""#))
            #expect(try await bob.get(Paths.chats).body.contains(#"class="room-muted small""#))
            async let quiet = Self.streamUntil(gateway, bob, path: Paths.live, room: nil, contains: "event: notify", seconds: 8)
            async let arrived = Self.streamUntil(gateway, bob, room: room, contains: "while muted")
            try await Task.sleep(for: .milliseconds(500))
            #expect(try await alice.post(Paths.chatSend, [("room", room), ("text", "while muted")]).status == 303)
            #expect(try await arrived.contains("while muted"))
            let silent = try await quiet
            #expect(silent.contains("event: unread") && !silent.contains("event: notify"), "\(silent.suffix(800))")
            let mutedCount = try await bob.get(Paths.chatUnread, json: true).body
            #expect(mutedCount.contains(#""unread":0"#), "\(mutedCount)")
            #expect(try await bob.post(Paths.chatMute, [("room", room), ("muted", "0")]).status == 303)
            #expect(try await bob.post(Paths.chatMute, [("room", room), ("muted", "yes")]).status == 400)
            #expect(!(try await bob.get(Paths.chatRoom + "?id=" + FormEncoding.escape(room)).body.contains(#"id="room-muted-note""#)))

            // Hostile text is shown as text: markup, scripts, right-to-left overrides.
            let hostile = "<script>alert(1)</script><b>x</b> \u{202E}evil"
            #expect(try await alice.post(Paths.chatSend, [("room", room), ("text", hostile)]).status == 303)
            let shown = try await bob.get(Paths.chatRoom + "?id=" + FormEncoding.escape(room)).body
            #expect(shown.contains("&lt;script&gt;alert(1)&lt;/script&gt;&lt;b&gt;x&lt;/b&gt;") && !shown.contains("<script>alert(1)"))
            // Empty and over-long messages are refused with the reason; nothing is sent.
            #expect(try await alice.post(Paths.chatSend, [("room", room), ("text", "   ")]).status == 400)
            // Over-long counts UTF-8 bytes (what the homeserver counts): 20,000 Arabic letters are 40,000 bytes. A page
            // without the script gets the room again with the text whole in the composer and the reason; the script
            // gets the reason as JSON, a 413 that sending again cannot mend.
            let long = String(repeating: "ب", count: 20_000)
            let refused = try await alice.post(Paths.chatSend, [("room", room), ("text", long)])
            #expect(refused.status == 422 && refused.body.contains(">\(long)</textarea>") && refused.body.contains(#"id="composer-error" role="alert">Too long"#))
            let refusedJSON = try await gateway.post(
                Paths.chatSend, form: [("csrf", try await alice.csrf()), ("room", room), ("text", long)],
                cookies: alice.cookies.values, headers: [("Origin", gateway.origin), ("Accept", "application/json")])
            #expect(refusedJSON.status == 413 && refusedJSON.body.contains(#""error":"chat_too_long""#), "\(refusedJSON.body)")
            // Just under the limit in bytes goes (16,383 two-byte letters, 32,766 bytes).
            #expect(try await alice.post(Paths.chatSend, [("room", room), ("text", String(repeating: "ب", count: 16_383))]).status == 303)

            // A group with a username nobody has is not made: the page says which, and keeps what was entered.
            let unknown = try await alice.post(Paths.chatGroup, [("name", "Garden <club>"), ("members", "\(bobName), nobody-here")])
            #expect(unknown.status == 422 && unknown.body.contains("nobody-here") && unknown.body.contains(#"value="Garden &lt;club&gt;""#))
            #expect(try await alice.post(Paths.chatGroup, [("name", " "), ("members", bobName)]).status == 422)

            // A room Bob is not in stays closed to him, by page, stream, history and form.
            let group = try Self.room(of: try await alice.post(Paths.chatGroup, [("name", "Alice alone"), ("members", aliceName)]))
            #expect(try await bob.get(Paths.chatRoom + "?id=" + FormEncoding.escape(group)).status == 403)
            #expect(try await bob.get(Paths.chatHistory + "?id=" + FormEncoding.escape(group)).status == 403)
            #expect(try await bob.post(Paths.chatSend, [("room", group), ("text", "let me in")]).status == 403)
            #expect(try await bob.post(Paths.chatMembership, [("room", group), ("action", "join")]).status == 403)
            #expect(try await bob.post(Paths.chatRead, [("room", group), ("event", "$x")]).status == 403)
            #expect(try await bob.get(Paths.chatEvents + "?room=" + FormEncoding.escape(group)).status == 403)
            #expect(try await bob.get(Paths.chatRoom + "?id=not-a-room").status == 400)
            // Without the page's token and without fetch metadata (a browser that sends none, a client with the cookie
            // alone), nothing of a room is read, whatever else the request says; a wrong token is refused the same.
            for path in [Paths.chatHistory + "?id=" + FormEncoding.escape(room), Paths.chatEvents + "?room=" + FormEncoding.escape(room)] {
                for headers in [[("Accept", "application/json")], [("Accept", "application/json"), ("X-Gatehouse-CSRF", "forged")]] {
                    #expect(try await gateway.get(path, cookies: bob.cookies.values, headers: headers).status == 403, "\(path) \(headers)")
                }
            }

            // Each session's device is the member's own, named for the browser, its token sealed at rest.
            let aliceDevices = try await Self.devices(synapse, aliceID)
            #expect(aliceDevices.count == 1 && (aliceDevices.first?["display_name"] as? String)?.hasPrefix("Gatehouse") == true)
            let rows = try await gateway.built.stores.matrixDevices.all(limit: 10)
            #expect(Set(rows.map(\.userID)) == [aliceID, bobID])
            // The token never reaches the browser: not in a page, an answer to the script, or the event stream.
            let aliceToken = try #require(rows.first { $0.userID == aliceID }?.accessToken)
            let seen = [
                try await alice.get(Paths.chats).body, try await alice.get(Paths.chatRoom + "?id=" + FormEncoding.escape(room)).body,
                try await alice.get(Paths.chatUnread, json: true).body,
                try await alice.get(Paths.chatHistory + "?id=" + FormEncoding.escape(room), json: true).body,
                try await Self.streamUntil(gateway, alice, room: nil, contains: "event: rooms"),
                try await Self.streamUntil(gateway, alice, path: Paths.live, room: nil, contains: "event: unread"),
            ]
            #expect(seen.allSatisfy { !$0.contains(aliceToken) && !$0.contains("syt_") })
            if let database = gateway.built.stores.sqlite {
                let stored = try await database.query("SELECT access_token FROM matrix_devices").compactMap { $0.column("access_token")?.string }
                #expect(stored.count == 2 && stored.allSatisfy { $0.hasPrefix("gh1:") && !$0.hasPrefix("syt_") })
            }

            // Alice's device logged out from another client (its device list): the gateway finds the token refused (its
            // sync loop first, or the next call, which then says so) and the next request runs on a new device of hers,
            // the old row gone.
            let oldDevice = try #require(aliceDevices.first?["device_id"] as? String)
            #expect(try await synapse.admin(.DELETE, "/_synapse/admin/v2/users/\(aliceID)/devices/\(oldDevice)").status == 200)
            let first = try await alice.post(Paths.chatSend, [("room", room), ("text", "are you there?")])
            if first.status != 303 {
                #expect(first.status == 503 && first.body.contains("was renewed"), "\(first.status)")
                #expect(try await alice.post(Paths.chatSend, [("room", room), ("text", "are you there?")]).status == 303)
            }
            let renewed = try await Self.devices(synapse, aliceID)
            #expect(renewed.count == 1 && renewed.first?["device_id"] as? String != oldDevice)
            #expect(try await gateway.built.stores.matrixDevices.all(limit: 10).filter { $0.userID == aliceID }.map(\.deviceID) == renewed.compactMap { $0["device_id"] as? String })

            // Signing out logs the session's device out at once.
            let csrf = try await bob.csrf()
            _ = try await gateway.post(Paths.signOut, form: [("csrf", csrf)], cookies: bob.cookies.values, headers: [("Origin", gateway.origin)])
            #expect(try await Self.devices(synapse, bobID).isEmpty)
            #expect(try await gateway.built.stores.matrixDevices.all(limit: 10).map(\.userID) == [aliceID])
        }
    }

    @Test func aMemberAtSSOGetsNoMatrixSessionByAnyRoute() async throws {
        // A homeserver of its own, configured as the docs recommend: no sign-in for browsers, the gateway's JWT login
        // only (and on the shared one, another test's upgrade would make the member registered here).
        try await TestSynapse.own(oidcSignIn: false) { synapse in
            // check-config finds nothing wrong with it, and names a JWT secret the homeserver does not share.
            #expect(await synapse.chatWithSessions.problems() == [])
            var wrongSecret = synapse.chatWithSessions
            wrongSecret.jwtSecret = "not-the-homeservers-secret-0123456789"
            #expect(await wrongSecret.problems().first?.hasPrefix("chat.jwt_secret_file: the homeserver refused the gateway's JWT login") == true)
            // The homeserver offers a browser no sign-in of its own: a member at `sso` has no way in there.
            let flows = try await synapse.call(.GET, "/_matrix/client/v3/login", token: nil).json["flows"] as? [[String: Any]] ?? []
            #expect(!flows.isEmpty && !flows.contains { $0["type"] as? String == "m.login.sso" })

            try await Self.live(synapse) { gateway in
                let carol = try await Member.signIn(gateway, as: "alice")
                // Chats is the onboarding prompt; the chat's other routes refuse; no device, no login at the homeserver.
                let chats = try await carol.get(Paths.chats)
                #expect(chats.status == 200 && chats.body.contains(#"id="add-features""#) && !chats.body.contains(#"id="chat-start""#), "\(chats.status) \(chats.location ?? "")")
                #expect(try await carol.get(Paths.chatEvents).status == 403)
                #expect(try await carol.get(Paths.chatNew).body.contains(#"id="add-features""#))
                #expect(try await carol.get(Paths.chatUnread, json: true).body.contains(#""chat":false"#))
                #expect(try await carol.post(Paths.chatDirect, [("username", "bob")]).status == 403)
                #expect(try await gateway.built.stores.matrixDevices.all(limit: 10).isEmpty)
                // The homeserver never saw the member: no account by their subject or their SSO username, so no device.
                let sub = try #require(DevelopmentAccounts.account(username: "alice")?.sub)
                #expect(try await synapse.admin(.GET, "/_synapse/admin/v1/auth_providers/oidc/users/" + sub).status == 404)
                #expect(try await synapse.user("alice") == nil)

                // The same homeserver serves a member who upgrades: the account is made, and the end of the upgrade
                // prepares the session's device before the member opens Chats.
                let dana = try await Member.signIn(gateway, as: "bob")
                let name = SynapseChatTests.unique("dana")
                #expect(try await dana.register(username: name).location?.hasPrefix(Paths.upgradeDone) == true)
                #expect(try await dana.get(Paths.upgradeDone).status == 200)
                let userID = "@\(name):\(TestSynapse.serverName)"
                var devices: [[String: Any]] = []
                for _ in 0..<100 where devices.isEmpty {
                    devices = try await Self.devices(synapse, userID)
                    if devices.isEmpty { try await Task.sleep(for: .milliseconds(100)) }
                }
                #expect(devices.count == 1)
                #expect(try await dana.get(Paths.chats).body.contains(#"id="chat-start""#))
                #expect(try await Self.devices(synapse, userID).count == 1)
            }
        }
    }

    /// What another Matrix client sends (markup in `formatted_body`, scripts, right-to-left overrides, a body near the
    /// homeserver's 64 KB limit, an encrypted event) is shown as text, or as the note on encryption; and text that is
    /// not UTF-8 is refused, nothing sent.
    @Test func whatOtherClientsSendIsShownAsText() async throws {
        // A homeserver of its own: alice's account on the shared one is the first test's.
        try await TestSynapse.own(oidcSignIn: false) { synapse in try await Self.live(synapse) { gateway in
            let alice = try await Member.signIn(gateway, as: "alice")
            let aliceName = SynapseChatTests.unique("alice")
            #expect(try await alice.register(username: aliceName).location?.hasPrefix(Paths.upgradeDone) == true)
            // Another member's own client: an account of the homeserver's, with a token of its own.
            let other = SynapseChatTests.unique("other")
            let otherID = "@\(other):\(TestSynapse.serverName)"
            #expect(try await synapse.admin(.PUT, "/_synapse/admin/v2/users/\(otherID)", json: ["displayname": "Other <b>client</b>"]).status == 201)
            let token = try #require(try await synapse.admin(.POST, "/_synapse/admin/v1/users/\(otherID)/login", json: [:]).json["access_token"] as? String)
            let created = try await synapse.call(
                .POST, "/_matrix/client/v3/createRoom", json: ["invite": ["@\(aliceName):\(TestSynapse.serverName)"], "is_direct": true], token: token)
            let room = try #require(created.json["room_id"] as? String)
            #expect(try await alice.post(Paths.chatMembership, [("room", room), ("action", "join")]).status == 303)
            let hostile: [[String: Any]] = [
                ["msgtype": "m.text", "body": "plain <img src=x onerror=alert(1)>", "format": "org.matrix.custom.html",
                 "formatted_body": "<script>alert(2)</script><a href=\"javascript:alert(3)\">x</a>"],
                ["msgtype": "m.text", "body": "\u{202E}gnp.exe\u{202C} and <svg onload=alert(4)>"],
                ["msgtype": "m.text", "body": String(repeating: "long ", count: 12_000) + "end"],
                // Formatting through the allowlist: what may be shown is, nothing else.
                ["msgtype": "m.text", "body": "fallback", "format": "org.matrix.custom.html",
                 "formatted_body": "<b>bold</b> <a href=\"https://ok.test/x\" onclick=\"alert(5)\">ok</a><img src=x onerror=alert(6)>"
                    + "<svg><script>alert(7)</script></svg><mx-reply>the reply's fallback</mx-reply><a href=\"&#106;avascript:alert(8)\">eight</a>"],
            ]
            for (index, content) in hostile.enumerated() {
                let sent = try await synapse.call(.PUT, "/_matrix/client/v3/rooms/\(room)/send/m.room.message/h\(index)", json: content, token: token)
                #expect(sent.status == 200, "\(sent.json)")
            }
            let encrypted = try await synapse.call(
                .PUT, "/_matrix/client/v3/rooms/\(room)/send/m.room.encrypted/e1",
                json: ["algorithm": "m.megolm.v1.aes-sha2", "ciphertext": "AwgAEn...", "sender_key": "k", "device_id": "D", "session_id": "s"], token: token)
            #expect(encrypted.status == 200)

            let page = try await alice.get(Paths.chatRoom + "?id=" + FormEncoding.escape(room)).body
            // (A formatted body is shown through the allowlist instead of the plain one: its script goes, its link's text stays.)
            #expect(!page.contains("plain &lt;img") && !page.contains("<img src=x"))
            #expect(!page.contains("<script>alert(2)") && !page.contains("javascript:alert(3)"))
            #expect(page.contains("&lt;svg onload=alert(4)&gt;") && page.contains("\u{202E}gnp.exe"))
            // The longest body is shown up to the gateway's limit for one message, and marked as cut.
            #expect(page.contains(String(repeating: "long ", count: 6_553) + "lon…") && !page.contains("long end"))
            #expect(page.contains("Other &lt;b&gt;client&lt;/b&gt;") && !page.contains("<b>client</b>"))
            #expect(page.contains("encrypted on another device"))
            // (ok.test is outside the allowlist: its link goes through the leaving page, as an app's would.)
            let leaving = FormEncoding.escape("https://ok.test/x")
            #expect(page.contains(#"<b>bold</b> <a href="\#(gateway.origin)/leaving?to=\#(leaving)" rel="noopener noreferrer nofollow" target="_blank">ok</a>eight"#), "\(page)")
            #expect(!["alert(5)", "alert(6)", "alert(7)", "alert(8)", "the reply&#39;s fallback", "<img", "<svg"].contains { page.contains($0) })
            // The room's list line says the same things as text.
            #expect(try await !alice.get(Paths.chats).body.contains("<svg onload"))

            // Edits by the other client: of alice's message (forged), without new content, of a line about the room, and
            // of its own message (allowed). Only its own is applied, after a reload and live alike.
            let said = try await gateway.post(
                Paths.chatSend, form: [("csrf", try await alice.csrf()), ("room", room), ("text", "alice's own words")],
                cookies: alice.cookies.values, headers: [("Origin", gateway.origin), ("Accept", "application/json")])
            let aliceEvent = try #require(said.body.firstMatch(of: /"event_id":"([^"]+)"/)?.1)
            let ownEvent = try #require(
                try await synapse.call(.PUT, "/_matrix/client/v3/rooms/\(room)/send/m.room.message/o1", json: ["msgtype": "m.text", "body": "other's typo"], token: token)
                    .json["event_id"] as? String)
            func replacement(of original: String, _ body: String, newContent: Bool = true) -> [String: Any] {
                var content: [String: Any] = ["msgtype": "m.text", "body": "* " + body, "m.relates_to": ["rel_type": "m.replace", "event_id": original]]
                if newContent { content["m.new_content"] = ["msgtype": "m.text", "body": body] }
                return content
            }
            async let liveEdits = Self.streamUntil(gateway, alice, room: room, contains: "other&#39;s fixed words")
            try await Task.sleep(for: .milliseconds(500))
            let forgeries = [
                replacement(of: String(aliceEvent), "forged by another member"), replacement(of: ownEvent, "fallback only", newContent: false),
                replacement(of: "$not-in-this-room", "edit of nothing"), replacement(of: ownEvent, "other's fixed words"),
            ]
            for (index, content) in forgeries.enumerated() {
                let sent = try await synapse.call(.PUT, "/_matrix/client/v3/rooms/\(room)/send/m.room.message/f\(index)", json: content, token: token)
                // (The homeserver may itself refuse an edit of an event it does not have.)
                #expect(sent.status == 200 || (index == 2 && sent.status == 400), "\(index): \(sent.json)")
            }
            let live = try await liveEdits
            // (The edit comes as alice's page shows it: the line it edits, rendered whole, under that line's id.)
            #expect(live.contains("other&#39;s fixed words") && !live.contains("forged by another member") && !live.contains("fallback only"), "\(live.suffix(1500))")
            #expect(live.contains(#""replaces":"\#(ownEvent)""#) && live.contains(#""id":"\#(ownEvent)""#), "\(live.suffix(1500))")
            #expect(!live.contains("edit of nothing"))
            let edited = try await alice.get(Paths.chatRoom + "?id=" + FormEncoding.escape(room)).body
            #expect(edited.contains("alice&#39;s own words") || edited.contains("alice's own words"))
            #expect(!edited.contains("forged by another member") && !edited.contains("fallback only") && !edited.contains("edit of nothing"))
            #expect(edited.contains("other&#39;s fixed words") || edited.contains("other's fixed words"))
            #expect(!edited.contains("other&#39;s typo") && !edited.contains("other's typo"))

            // Alice edits and deletes her own message through the gateway; the other member's she may not touch there,
            // whatever the homeserver would let her do.
            func act(_ path: String, _ fields: [(String, String)]) async throws -> (status: Int, body: String) {
                let answer = try await gateway.post(
                    path, form: [("csrf", try await alice.csrf()), ("room", room)] + fields, cookies: alice.cookies.values,
                    headers: [("Origin", gateway.origin), ("Accept", "application/json")])
                return (answer.status, answer.body)
            }
            let notHers = try await act(Paths.chatEdit, [("event", ownEvent), ("text", "alice rewrites it")])
            #expect(notHers.status == 403 && notHers.body.contains("chat_not_yours"), "\(notHers)")
            #expect(try await act(Paths.chatDelete, [("event", ownEvent)]).status == 403)
            #expect(try await act(Paths.chatEdit, [("event", "$not-an-event"), ("text", "x")]).status == 400)
            // A reply answers a message of this room, or is refused with nothing sent.
            #expect(try await act(Paths.chatSend, [("text", "answer"), ("reply_to", "not-an-id")]).status == 400)
            #expect(try await act(Paths.chatSend, [("text", "answer"), ("reply_to", "$no-such-event")]).status == 400)
            let answer = try await act(Paths.chatSend, [("text", "answering the other"), ("reply_to", ownEvent)])
            #expect(answer.status == 200, "\(answer)")
            // Alice reacts to the other's message and takes it back with the same key; a key that is no reaction, or
            // a reaction to an event the room does not have, is refused by the gateway with nothing sent.
            let reacted = try await act(Paths.chatReact, [("event", ownEvent), ("key", "👍🏽")])
            #expect(reacted.status == 200 && reacted.body.contains(#""reacted":true"#), "\(reacted)")
            #expect(try await act(Paths.chatReact, [("event", ownEvent), ("key", "👍🏽")]).body.contains(#""reacted":false"#))
            for key in [String(repeating: "😀", count: 17), "a\nb", ""] {
                let refused = try await act(Paths.chatReact, [("event", ownEvent), ("key", key)])
                #expect(refused.status == 400 && refused.body.contains("chat_invalid_reaction"), "\(key): \(refused)")
            }
            #expect(try await act(Paths.chatReact, [("event", "$no-such-event"), ("key", "👍")]).status == 400)
            // The other client's reaction with markup for its key is shown as text.
            let hostileKey: [String: Any] = ["m.relates_to": ["rel_type": "m.annotation", "event_id": ownEvent, "key": "<img src=x onerror=alert(5)>"]]
            #expect(try await synapse.call(.PUT, "/_matrix/client/v3/rooms/\(room)/send/m.reaction/hk", json: hostileKey, token: token).status == 200)
            let withReaction = try await alice.get(Paths.chatRoom + "?id=" + FormEncoding.escape(room)).body
            #expect(withReaction.contains("&lt;img src=x onerr") && !withReaction.contains("<img src=x onerr"), "\(withReaction.suffix(3000))")
            #expect(try await act(Paths.chatTyping, [("typing", "1")]).status == 200)
            #expect(try await act(Paths.chatTyping, [("typing", "yes")]).status == 400)
            #expect(try await act(Paths.chatEdit, [("event", String(aliceEvent)), ("text", "   ")]).status == 400)
            async let rewritten = Self.streamUntil(gateway, alice, room: room, contains: "better")
            try await Task.sleep(for: .milliseconds(500))
            #expect(try await act(Paths.chatEdit, [("event", String(aliceEvent)), ("text", "alice's **better** words")]).status == 200)
            let rewrite = try await rewritten
            #expect(rewrite.contains(#"<strong>better<\/strong>"#) && rewrite.contains(#""replaces":"\#(aliceEvent)""#), "\(rewrite.suffix(1500))")
            async let deleted = Self.streamUntil(gateway, alice, room: room, contains: "kind-deleted")
            try await Task.sleep(for: .milliseconds(500))
            #expect(try await act(Paths.chatDelete, [("event", String(aliceEvent))]).status == 200)
            let deletion = try await deleted
            #expect(deletion.contains(#""id":"\#(aliceEvent)""#) && deletion.contains("kind-deleted"), "\(deletion.suffix(1500))")
            let afterDeletion = try await alice.get(Paths.chatRoom + "?id=" + FormEncoding.escape(room)).body
            #expect(!afterDeletion.contains("better") && afterDeletion.contains("other&#39;s fixed words"))

            // The other client takes a name with an unclosed right-to-left override and one of the strings' own
            // placeholders: in English and in Arabic the gateway's words around it keep their order, and the
            // placeholder is that text, never filled in.
            let hostileName = "\u{202E}Mallory {target} {name}"
            #expect(try await synapse.call(.PUT, "/_matrix/client/v3/profile/\(otherID)/displayname", json: ["displayname": hostileName], token: token).status == 200)
            let isolated = "\u{2068}\(hostileName)\u{2069}"
            var renamed = ""
            for _ in 0..<40 where !renamed.contains(isolated) {
                renamed = try await alice.get(Paths.chatRoom + "?id=" + FormEncoding.escape(room)).body
                if !renamed.contains(isolated) { try await Task.sleep(for: .milliseconds(250)) }
            }
            #expect(renamed.contains("<p class=\"note\">\(isolated) joined</p>"), "\(renamed.suffix(3000))")
            let arabic = try await gateway.get(
                Paths.chatRoom + "?id=" + FormEncoding.escape(room), cookies: alice.cookies.values, headers: [("Accept-Language", "ar")]).body
            #expect(arabic.contains("<p class=\"note\">انضم \(isolated)</p>"), "\(arabic.suffix(3000))")
            #expect(try await alice.get(Paths.chats).body.contains("\(isolated)"))

            // Text that is not UTF-8 (a form's percent-encoding of stray bytes) is refused, nothing sent.
            let csrf = try await alice.csrf()
            let broken = try await gateway.send(
                .POST, Paths.chatSend, cookies: alice.cookies.values,
                headers: [("Content-Type", "application/x-www-form-urlencoded"), ("Origin", gateway.origin)],
                body: "csrf=\(csrf)&room=\(FormEncoding.escape(room))&text=%FF%FEbad")
            #expect(broken.status == 400, "\(broken.status)")
            let history = try await alice.get(Paths.chatHistory + "?id=" + FormEncoding.escape(room), json: true).body
            #expect(!history.contains("bad\""))
        } }
    }

    /// Every way a gateway session ends logs its Matrix device out (what `MatrixDeviceReaper` runs every ten seconds,
    /// called here at once): the session gone (expiry, sign-out elsewhere, back-channel logout), no longer registered
    /// (an operator's reset), or its member no longer in the chat feature's groups (every tenth pass).
    @Test func aDeviceIsLoggedOutHoweverItsSessionEnds() async throws {
        try await TestSynapse.own(oidcSignIn: false) { synapse in
            try await UpgradeFlowTests.live(configure: { configuration in
                configuration.registration.chat = synapse.chatWithSessions
                configuration.features.audiences = [.chats: FeatureAudience(requiredGroups: ["/staff"])]
            }) { gateway in
                let first = try await Member.signIn(gateway, as: "alice")
                let name = SynapseChatTests.unique("alice")
                #expect(try await first.register(username: name).location?.hasPrefix(Paths.upgradeDone) == true)
                let userID = "@\(name):\(TestSynapse.serverName)"
                var members = [first]
                for _ in 0..<2 { members.append(try await Member.signIn(gateway, as: "alice")) }
                for member in members { #expect(try await member.get(Paths.chats).body.contains(#"id="chat-start""#)) }
                #expect(try await Self.devices(synapse, userID).count == 3)
                let chats = try #require(gateway.built.running.foundation.chats)
                let stores = gateway.built.stores
                let rows = try await stores.matrixDevices.all(limit: 10)
                #expect(rows.count == 3)
                func live() async throws -> Set<String> { Set(try await Self.devices(synapse, userID).compactMap { $0["device_id"] as? String }) }

                // The session gone.
                try await stores.sessions.delete(id: rows[0].sessionID)
                #expect(try await chats.reap(full: false) == 1)
                #expect(try await live() == [rows[1].deviceID, rows[2].deviceID])
                // Out of the feature's groups (the identity a refresh brought): only the full pass looks.
                var moved = try #require(try await stores.sessions.find(id: rows[1].sessionID))
                moved.identity.groups = ["/volunteers"]
                try await stores.sessions.update(moved)
                #expect(try await chats.reap(full: false) == 0)
                #expect(try await chats.reap(full: true) == 1)
                #expect(try await live() == [rows[2].deviceID])
                // No longer registered: an operator's reset.
                #expect(try await stores.registrations.unregister(sub: try #require(DevelopmentAccounts.account(username: "alice")?.sub)))
                #expect(try await chats.reap(full: false) == 1)
                #expect(try await live().isEmpty)
                #expect(try await stores.matrixDevices.all(limit: 10).isEmpty)
            }
        }
    }
}
