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
            #expect(try await !registrations.isRegistered(sub: "b"))
            #expect(try await registrations.isRegistered(sub: "a"))
            #expect(try await registrations.isUsernameTaken("ada"))
            // What the member chose, as they chose it (the first registration's, not the refused ones').
            let account = try await registrations.account(sub: "a")
            #expect(account == RegisteredAccount(username: "Ada", phoneNumber: PhoneNumber.stored("+15550100001")))
            #expect(try await registrations.account(sub: "b") == nil)
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
