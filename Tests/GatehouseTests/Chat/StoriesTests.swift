import AsyncHTTPClient
import Foundation
import GatehouseCore
import GatehouseMatrix
import Logging
import Testing

@testable import Gatehouse

/// Stories against a real Synapse: alice's story reaches bob, with whom she has a direct chat, and not olive, with
/// whom she has none; bob sees it as new, opens it, and it is seen; alice sees bob among its viewers; its text stays
/// text; a day later (the reaper's clock moved on) it is redacted on the homeserver and gone for both.
@Suite(.serialized) struct StoriesTests {
    typealias Member = UpgradeFlowTests.Member

    @Test func aStoryLastsADayForThePeopleOfItsAuthorsDirectChats() async throws {
        let synapse = try await TestSynapse.shared.value
        try await ChatTests.directChat(synapse, provider: "stories") { pair in
            let (gateway, alice, bob, olive, aliceName, bobName) = (pair.gateway, pair.alice, pair.bob, pair.olive, pair.aliceName, pair.bobName)
            // At `sso`, Stories is the onboarding prompt. Olive then registers, with no direct chat with Alice.
            #expect(try await olive.get(Paths.stories).body.contains(#"id="add-features""#))
            _ = try await olive.register(username: SynapseChatTests.unique("olive"), phone: "+15550100003")

            // An empty story is refused beside the form; a story with markup is posted as text.
            let empty = try await alice.post(Paths.storyPost, [("text", "   ")])
            #expect(empty.status == 422 && empty.body.contains(#"id="story-error""#))
            let text = "<script>alert(1)</script> Off to the garden"
            let posted = try await alice.post(Paths.storyPost, [("text", text)])
            #expect(posted.status == 303 && posted.location == Paths.stories + "?done=posted", "\(posted.body.suffix(600))")

            // Bob: Alice's stories, new; opened, shown as text; then seen.
            // Her story room's invite is listed, not joined by the page (a GET joins nothing): Bob's form opens it.
            let list = try await bob.get(Paths.stories).body
            #expect(list.contains(#"class="room new""#) && list.contains("New stories") && list.contains(#"action="/stories/open""#), "\(list)")
            let invitedRoom = try #require(list.firstMatch(of: /<li class="room new" data-room="([^"]+)"/)?.1)
            #expect(try await bob.get(Paths.stories).body.contains(#"action="/stories/open""#))
            #expect(try await bob.post(Paths.storyOpen, [("room", "!someone-else:chat.test")]).status == 403)
            let joined = try await bob.post(Paths.storyOpen, [("room", String(invitedRoom))])
            let href = try #require(joined.location)
            #expect(joined.status == 303 && href.hasPrefix(Paths.storyView + "?room="))
            let opened = try await bob.get(href).body
            #expect(opened.contains("&lt;script&gt;alert(1)&lt;/script&gt; Off to the garden") && !opened.contains("<script>alert(1)"))
            // Opening them sends nothing (another site could open the page): the page's script marks them seen.
            #expect(try await bob.get(Paths.stories).body.contains("New stories: 1"))
            let viewed = try #require(opened.firstMatch(of: /data-room="([^"]+)"/)?.1)
            let seen = try await bob.post(Paths.storySeen, [("room", String(viewed))])
            #expect(seen.status == 200 && seen.body.contains(#""seen":1"#), "\(seen.body)")
            let again = try await bob.get(Paths.stories).body
            #expect(again.contains("Stories seen: 1") && !again.contains(#"class="room new""#))

            // Alice sees Bob among her story's viewers.
            let mine = try await alice.get(Paths.stories).body
            #expect(mine.contains("Seen by 1") && mine.contains("Member \(bobName)"), "\(mine)")
            // Olive, with no direct chat with Alice, sees none of it.
            let olives = try await olive.get(Paths.stories).body
            #expect(olives.contains(#"id="no-stories""#) && !olives.contains("Off to the garden"))

            // A day and an hour later by the reaper's clock: redacted on the homeserver, gone for both.
            let chat = synapse.chatWithSessions
            let admin = try #require(chat.backend(http: HTTPClient.shared) as? SynapseChatBackend)
            let chats = ChatSessions(
                client: MatrixClient(http: HTTPClient.shared, homeserver: try #require(chat.homeserverURL), timeoutSeconds: 10),
                login: LoginToken(secret: synapse.jwtSecret), serverName: TestSynapse.serverName, devices: gateway.built.stores.matrixDevices,
                sessions: gateway.built.stores.sessions, mayChat: { _ in true }, logger: Logger(label: "stories-test"))
            let today = StoryReaper(admin: admin, chats: chats, lifetime: 24 * 3600, logger: Logger(label: "stories-test"))
            #expect(try await today.sweep() == 0)
            let tomorrow = StoryReaper(
                admin: admin, chats: chats, lifetime: 24 * 3600, logger: Logger(label: "stories-test"), now: { Date().addingTimeInterval(25 * 3600) })
            #expect(try await tomorrow.sweep() >= 1)
            let aliceID = "@\(aliceName):\(TestSynapse.serverName)"
            // The admin API lists a new room once the homeserver's room statistics caught up.
            var listed: String?
            for _ in 0..<40 where listed == nil {
                listed = try await admin.storyRooms().first { $0.creator == aliceID }?.room
                if listed == nil { try await Task.sleep(for: .milliseconds(250)) }
            }
            let storyRoom = try #require(listed)
            #expect(try await admin.expiredStories(in: storyRoom, by: aliceID, cutoff: Int(Date().timeIntervalSince1970 * 1000) + 1_000).isEmpty)
            #expect(!(try await alice.get(Paths.stories).body.contains("Off to the garden")))
            let gone = try await bob.get(String(href).replacingOccurrences(of: "&amp;", with: "&")).body
            #expect(gone.contains(#"id="no-stories""#) && !gone.contains("Off to the garden"))
        }
    }
}
