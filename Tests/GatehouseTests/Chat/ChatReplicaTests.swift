import Foundation
import GatehouseCore
import Testing

@testable import Gatehouse
@testable import GatehouseStorage

/// The gateway's own chat on two replicas of one PostgreSQL (run with the replica suite): a session has one Matrix
/// device whichever replica made it, even when both make one at once, and its pages on either replica get live
/// updates; signing out on one logs the device out.
@Suite(.serialized) struct ChatReplicaTests {
    typealias Member = UpgradeFlowTests.Member

    @Test func aSessionHasOneDeviceAndLiveUpdatesOnEitherReplica() async throws {
        // A homeserver of its own: the development members' accounts on the shared one are other tests' (linked to the
        // same subjects, they would make the members registered at sign-in).
        try await TestSynapse.own(oidcSignIn: false) { synapse in try await ReplicaTests.withReplicas(configure: { configuration in
            configuration.registration.chat = synapse.chatWithSessions
            configuration.registration.pinBcryptCost = 4
        }) { first, second in
            let alice = try await Member.signIn(first, as: "alice")
            let bob = try await Member.signIn(second, as: "bob")
            let aliceName = SynapseChatTests.unique("alice"), bobName = SynapseChatTests.unique("bob")
            #expect(try await alice.register(username: aliceName).location?.hasPrefix(Paths.upgradeDone) == true)
            #expect(try await bob.register(username: bobName, phone: "+15550100002").location?.hasPrefix(Paths.upgradeDone) == true)
            let aliceID = "@\(aliceName):\(TestSynapse.serverName)"
            let aliceOnSecond = Member(gateway: second, cookies: alice.cookies)
            #expect(try await ReplicaTests.timeUntil { try await aliceOnSecond.get(Paths.chats).body.contains(#"id="chat-start""#) } != nil)

            // Both replicas open the session's chat at once: each may log in, one device stays (the other is logged
            // out again), and both use it.
            async let onFirst = alice.get(Paths.chats)
            async let onSecond = aliceOnSecond.get(Paths.chats)
            let (pageOne, pageTwo) = try await (onFirst, onSecond)
            #expect(pageOne.status == 200 && pageTwo.status == 200)
            let devices = try await ChatTests.devices(synapse, aliceID)
            #expect(devices.count == 1, "\(devices)")
            #expect(try await first.built.stores.matrixDevices.all(limit: 10).filter { $0.userID == aliceID }.map(\.deviceID)
                == devices.compactMap { $0["device_id"] as? String })

            // Bob (on the second replica) writes to Alice; her pages on both replicas hear it live.
            let opened = try await bob.post(Paths.chatDirect, [("username", aliceName)])
            let room = try ChatTests.room(of: opened)
            #expect(try await ReplicaTests.timeUntil(limit: .seconds(20)) {
                try await alice.post(Paths.chatMembership, [("room", room), ("action", "join")]).status == 303
            } != nil)
            async let heardOnFirst = ChatTests.streamUntil(first, alice, room: room, contains: "Hello across replicas")
            async let heardOnSecond = ChatTests.streamUntil(second, aliceOnSecond, room: room, contains: "Hello across replicas")
            try await Task.sleep(for: .milliseconds(800))
            #expect(try await bob.post(Paths.chatSend, [("room", room), ("text", "Hello across replicas")]).status == 303)
            let (one, two) = try await (heardOnFirst, heardOnSecond)
            #expect(one.contains("event: message") && one.contains("Hello across replicas"), "\(one.suffix(500))")
            #expect(two.contains("event: message") && two.contains("Hello across replicas"), "\(two.suffix(500))")

            // Signing out on the second replica logs the one device out.
            let csrf = try await aliceOnSecond.csrf()
            _ = try await second.post(Paths.signOut, form: [("csrf", csrf)], cookies: alice.cookies.values, headers: [("Origin", second.origin)])
            #expect(try await ChatTests.devices(synapse, aliceID).isEmpty)
        } }
    }
}
