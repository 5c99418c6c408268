import Foundation
import GatehouseCore
import GatehouseStorage
import Testing

@testable import Gatehouse

/// Registration in the store, on every backend: one statement that registers, raises the member's sessions and ends
/// the flow; counted sends and tries; the provisioning queue.
@Suite struct RegistrationStoreTests {
    static func registration(sub: String, username: String) throws -> Registration {
        Registration(
            sub: sub, username: username, phoneNumber: try PhoneNumber.parse("+15550100001").get(), displayName: "D", discoverability: .nobody,
            pinHash: "$2b$10$x", registeredAt: Date())
    }

    static func session(cookie: String, sub: String) -> Session {
        var session = SessionLifecycleTests.session(cookie: cookie)
        session.identity.sub = sub
        return session
    }

    @Test(arguments: StoreBackend.allCases) func registeringRaisesEverySessionOfTheMemberAndEndsTheFlow(backend: StoreBackend) async throws {
        try await SessionLifecycleTests.Harness.with(backend) { harness in
            let registrations = harness.stores.registrations
            let flows = harness.stores.flows
            for (cookie, sub) in [("a1", "a"), ("a2", "a"), ("b1", "b")] { try await harness.sessions.insert(Self.session(cookie: cookie, sub: sub)) }
            try await flows.save(RegistrationFlow(sub: "a", returnTo: "/chats", now: Date()))
            let stale = try #require(try await harness.sessions.find(id: SessionResolver.sessionID(forCookie: "a1")))

            #expect(try await registrations.register(Self.registration(sub: "a", username: "Ada")) == .registered)
            #expect(try await harness.sessions.find(id: SessionResolver.sessionID(forCookie: "a1"))?.level == .registered)
            #expect(try await harness.sessions.find(id: SessionResolver.sessionID(forCookie: "a2"))?.level == .registered)
            #expect(try await harness.sessions.find(id: SessionResolver.sessionID(forCookie: "b1"))?.level == .sso)
            #expect(try await flows.flow(sub: "a") == nil)

            // A request that read the session before the registration cannot write the old level back.
            var touched = stale
            touched.lastSeenAt = Date().addingTimeInterval(5)
            try await harness.sessions.update(touched)
            #expect(try await harness.sessions.find(id: stale.id)?.level == .registered)

            #expect(try await registrations.register(Self.registration(sub: "a", username: "other")) == .alreadyRegistered)
            #expect(try await registrations.register(Self.registration(sub: "b", username: "ADA")) == .usernameTaken)
            #expect(try await harness.sessions.find(id: SessionResolver.sessionID(forCookie: "b1"))?.level == .sso)
            #expect(try await registrations.account(sub: "b") == nil)
            #expect(try await registrations.account(sub: "a") != nil)
            #expect(try await registrations.isUsernameTaken("ada", for: "c", claimsSince: .distantPast))
            // What the member chose, as they chose it (the first registration's, not the refused ones').
            let account = try await registrations.account(sub: "a")
            #expect(
                account
                    == RegisteredAccount(username: "Ada", phoneNumber: PhoneNumber.stored("+15550100001"), displayName: "D", discoverability: .nobody))
            #expect(try await registrations.account(sub: "b") == nil)
        }
    }

    /// The registration gives every session of the member the chat account with the level; an operator's reset takes
    /// both away again, and a copy of the session read before the reset cannot write them back.
    @Test(arguments: StoreBackend.allCases) func aResetLowersTheSessionsAndAnOlderCopyCannotRaiseThemAgain(backend: StoreBackend) async throws {
        try await SessionLifecycleTests.Harness.with(backend) { harness in
            let registrations = harness.stores.registrations
            let id = SessionResolver.sessionID(forCookie: "r1")
            try await harness.sessions.insert(Self.session(cookie: "r1", sub: "r"))
            var registration = try Self.registration(sub: "r", username: "rita")
            registration.chatUserID = "@rita:chat.test"
            #expect(try await registrations.register(registration) == .registered)
            let raised = try #require(try await harness.sessions.find(id: id))
            #expect(raised.level == .registered && raised.chatUserID == "@rita:chat.test")
            #expect(try await registrations.lookup("@rita:chat.test")?.sub == "r")
            #expect(try await registrations.lookup("RITA")?.sub == "r")

            #expect(try await registrations.unregister(sub: "r"))
            let lowered = try #require(try await harness.sessions.find(id: id))
            #expect(lowered.level == .sso && lowered.chatUserID == nil)
            var stale = raised
            stale.lastSeenAt = Date().addingTimeInterval(5)
            try await harness.sessions.update(stale)
            let after = try #require(try await harness.sessions.find(id: id))
            #expect(after.level == .sso && after.chatUserID == nil)
            #expect(try await !registrations.unregister(sub: "r"))
            #expect(try await registrations.lookup("rita") == nil)
        }
    }

    /// A username held while its member finishes the flow: nobody else can claim it or sees it free, the holder can
    /// claim it again (a retry), a claim older than the window can be taken over, and a new claim releases the old
    /// one. Ending the flow or registering releases it; a registered name is never claimed.
    @Test(arguments: StoreBackend.allCases) func aClaimedUsernameIsHeldForItsMemberOnly(backend: StoreBackend) async throws {
        try await SessionLifecycleTests.Harness.with(backend) { harness in
            let registrations = harness.stores.registrations
            let now = Date()
            let window = now.addingTimeInterval(-RegistrationFlow.resumeWindow)
            #expect(try await registrations.claimUsername("Grace", for: "a", at: now, claimsSince: window))
            #expect(try await registrations.claimUsername("GRACE", for: "a", at: now, claimsSince: window))
            #expect(try await !registrations.claimUsername("grace", for: "b", at: now, claimsSince: window))
            #expect(try await registrations.isUsernameTaken("grace", for: "b", claimsSince: window))
            #expect(try await !registrations.isUsernameTaken("grace", for: "a", claimsSince: window))
            // Older than the window: b may have it.
            #expect(try await registrations.claimUsername("grace", for: "b", at: now, claimsSince: now.addingTimeInterval(1)))
            #expect(try await registrations.isUsernameTaken("grace", for: "a", claimsSince: window))
            // b changes their mind: "grace" is free again.
            #expect(try await registrations.claimUsername("hopper", for: "b", at: now, claimsSince: window))
            #expect(try await !registrations.isUsernameTaken("grace", for: "a", claimsSince: window))
            // The end of b's flow releases "hopper".
            try await harness.stores.flows.deleteFlow(sub: "b")
            #expect(try await registrations.claimUsername("hopper", for: "a", at: now, claimsSince: window))
            // a registers as "hopper": the claim is gone with it, and the name is nobody else's to claim.
            #expect(try await registrations.register(Self.registration(sub: "a", username: "hopper")) == .registered)
            #expect(try await !registrations.claimUsername("Hopper", for: "c", at: now, claimsSince: now.addingTimeInterval(1)))
            #expect(try await registrations.isUsernameTaken("HOPPER", for: "c", claimsSince: window))
        }
    }

    /// An account found on the homeserver at sign-in is recorded as a registration (with its Matrix ID, without a
    /// phone number), raises the member's sessions, and is not sent to the provisioning webhook.
    @Test(arguments: StoreBackend.allCases) func anExistingChatAccountIsRecordedAsARegistration(backend: StoreBackend) async throws {
        try await SessionLifecycleTests.Harness.with(backend) { harness in
            let registrations = harness.stores.registrations
            try await harness.sessions.insert(Self.session(cookie: "k1", sub: "k"))
            #expect(try await registrations.register(Self.registration(sub: "a", username: "kim")) == .registered)
            let now = Date()
            #expect(try await registrations.registerExisting(sub: "k", username: "kim", chatUserID: "@kim:chat.test", at: now) == .usernameTaken)
            #expect(
                try await registrations.registerExisting(sub: "k", username: "@kim:chat.test", chatUserID: "@kim:chat.test", at: now) == .registered)
            #expect(try await registrations.registerExisting(sub: "k", username: "kim2", chatUserID: "@kim2:chat.test", at: now) == .alreadyRegistered)
            #expect(try await harness.sessions.find(id: SessionResolver.sessionID(forCookie: "k1"))?.level == .registered)
            #expect(try await registrations.account(sub: "k") == RegisteredAccount(username: "@kim:chat.test", phoneNumber: nil, chatUserID: "@kim:chat.test"))
            let due = try await registrations.dueForProvisioning(now: now.addingTimeInterval(60), maximumAttempts: 5, limit: 10)
            #expect(due.map(\.registration.sub) == ["a"])
        }
    }

    @Test(arguments: StoreBackend.allCases) func codeSendsAreCountedPerMemberAndPerNumber(backend: StoreBackend) async throws {
        try await SessionLifecycleTests.Harness.with(backend) { harness in
            let flows = harness.stores.flows
            let number = try PhoneNumber.parse("+15550100001").get()
            let other = try PhoneNumber.parse("+15550100002").get()
            let now = Date()
            let hourAgo = now.addingTimeInterval(-3600)
            func reserve(_ sub: String, _ phone: PhoneNumber, at date: Date = now) async throws -> Result<Int, CodeSendRefusal> {
                try await flows.reserveCodeSend(sub: sub, phoneNumber: phone, at: date, since: hourAgo, perMember: 2, perPhoneNumber: 3)
            }
            _ = try await reserve("a", number, at: now.addingTimeInterval(-4000))  // outside the window: not counted
            #expect(try await reserve("a", number).isSuccess)
            #expect(try await reserve("a", other).isSuccess)
            #expect(try await reserve("a", other) == .failure(.memberLimit))
            #expect(try await reserve("b", number).isSuccess)
            let released = try await reserve("c", number)
            #expect(released.isSuccess)
            #expect(try await reserve("d", number) == .failure(.phoneNumberLimit))
            // A send that failed is released and counts no more.
            try await flows.releaseCodeSend(id: try released.get())
            #expect(try await reserve("d", number).isSuccess)

            #expect(try await flows.claimCodeAttempt(flowKey: "old-code", sub: "a", maximum: 5, at: now.addingTimeInterval(-4000)) == 1)
            try await flows.save(RegistrationFlow(sub: "old", returnTo: "/", now: now.addingTimeInterval(-3600)))
            try await flows.save(RegistrationFlow(sub: "new", returnTo: "/", now: now))
            // One stale flow, the send outside the window, the old code's tries.
            #expect(try await flows.deleteStale(flowsBefore: now.addingTimeInterval(-1800), sendsBefore: hourAgo) == 3)
            #expect(try await flows.flow(sub: "old") == nil)
            #expect(try await flows.flow(sub: "new") != nil)
        }
    }

    @Test(arguments: StoreBackend.allCases) func provisioningQueueBacksOffAndGivesUp(backend: StoreBackend) async throws {
        try await SessionLifecycleTests.Harness.with(backend) { harness in
            let registrations = harness.stores.registrations
            _ = try await registrations.register(Self.registration(sub: "a", username: "ada"))
            let now = Date()
            #expect(try await registrations.dueForProvisioning(now: now, maximumAttempts: 2, limit: 10).map(\.registration.username) == ["ada"])
            try await registrations.markProvisioningFailed(sub: "a", attempts: 1, nextAttemptAt: now.addingTimeInterval(60), error: "HTTP 500")
            #expect(try await registrations.dueForProvisioning(now: now, maximumAttempts: 2, limit: 10).isEmpty)
            #expect(try await registrations.dueForProvisioning(now: now.addingTimeInterval(61), maximumAttempts: 2, limit: 10).first?.attempts == 1)
            #expect(try await registrations.provisioningBacklog(maximumAttempts: 2) == (waiting: 1, failed: 0))
            try await registrations.markProvisioningFailed(sub: "a", attempts: 2, nextAttemptAt: now, error: "HTTP 500")
            #expect(try await registrations.dueForProvisioning(now: now.addingTimeInterval(3600), maximumAttempts: 2, limit: 10).isEmpty)
            #expect(try await registrations.provisioningBacklog(maximumAttempts: 2) == (waiting: 0, failed: 1))
        }
    }
}

/// Counted steps of the upgrade flow under concurrency: whatever runs at once, the store hands out exactly the tries
/// and sends the rules allow. Runs against every store backend.
@Suite struct RegistrationStoreConcurrencyTests {
    @Test(arguments: StoreBackend.allCases) func twoHundredParallelTriesOnOneCodeGetExactlyFive(backend: StoreBackend) async throws {
        try await SessionLifecycleTests.Harness.with(backend) { harness in
            let flows = harness.stores.flows
            let granted = try await withThrowingTaskGroup(of: Int?.self) { group in
                for _ in 0..<200 {
                    group.addTask { try await flows.claimCodeAttempt(flowKey: "code-1", sub: "a", maximum: 5, at: Date()) }
                }
                var granted: [Int] = []
                for try await attempt in group { if let attempt { granted.append(attempt) } }
                return granted
            }
            #expect(granted.sorted() == [1, 2, 3, 4, 5])
            #expect(try await flows.claimCodeAttempt(flowKey: "code-1", sub: "a", maximum: 5, at: Date()) == nil)
            // Another code has its own five.
            #expect(try await flows.claimCodeAttempt(flowKey: "code-2", sub: "a", maximum: 5, at: Date()) == 1)
        }
    }

    @Test(arguments: StoreBackend.allCases) func parallelSendsNeverPassTheLimits(backend: StoreBackend) async throws {
        try await SessionLifecycleTests.Harness.with(backend) { harness in
            let flows = harness.stores.flows
            let number = try PhoneNumber.parse("+15550100001").get()
            let now = Date()
            let reserved = try await withThrowingTaskGroup(of: Bool.self) { group in
                for index in 0..<100 {
                    group.addTask {
                        try await flows.reserveCodeSend(
                            sub: "member-\(index % 4)", phoneNumber: number, at: now, since: now.addingTimeInterval(-3600), perMember: 3,
                            perPhoneNumber: 3
                        ).isSuccess
                    }
                }
                var count = 0
                for try await ok in group where ok { count += 1 }
                return count
            }
            #expect(reserved == 3)
        }
    }
}
