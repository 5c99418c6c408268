import Testing

@testable import GatehouseCore

/// `withTimeout` is the deadline of every PostgreSQL query and of the listener's heartbeat: it must hold even when
/// the work it guards never notices its cancellation (a query written to a connection that has just closed).
@Suite struct TimeoutTests {
    /// Work that ignores cancellation and only ends when `release` is called.
    final class Stuck: Sendable {
        private let state = Locked((released: false, waiting: [CheckedContinuation<Void, Never>]()))

        func wait() async {
            await withCheckedContinuation { continuation in
                let released = state.withLockedValue { state in
                    if !state.released { state.waiting.append(continuation) }
                    return state.released
                }
                if released { continuation.resume() }
            }
        }

        /// Ends the work (once; later calls change nothing).
        func release() {
            let waiting = state.withLockedValue { state in
                defer { state = (true, []) }
                return state.waiting
            }
            for continuation in waiting { continuation.resume() }
        }
    }

    enum Expired: Error { case expired }

    @Test func theDeadlineHoldsWhenTheWorkIgnoresCancellation() async throws {
        let stuck = Stuck()
        defer { stuck.release() }
        // Ends the work after a minute, so that a deadline waiting for it fails the bound below instead of hanging.
        Task {
            try await Task.sleep(for: .seconds(60))
            stuck.release()
        }
        let expiredCalls = Locked(0)
        let start = ContinuousClock.now
        await #expect(throws: Expired.self) {
            try await withTimeout(.milliseconds(100), { await stuck.wait() }) {
                expiredCalls.withLockedValue { $0 += 1 }
                return Expired.expired
            }
        }
        // Not held until the work ends: the caller is back once the deadline passed (with room for a busy machine).
        #expect(ContinuousClock.now - start < .seconds(30))
        #expect(expiredCalls.withLockedValue { $0 } == 1)
    }

    @Test func workThatEndsInTimeGivesItsResultOrItsError() async throws {
        let expired = Locked(false)
        let value = try await withTimeout(.seconds(30), { 42 }) {
            expired.withLockedValue { $0 = true }
            return Expired.expired
        }
        #expect(value == 42)
        struct Refused: Error {}
        await #expect(throws: Refused.self) { try await withTimeout(.seconds(30), { throw Refused() }) { Expired.expired } }
        // The deadline's own action never runs once the work has answered.
        try await Task.sleep(for: .milliseconds(50))
        #expect(!expired.withLockedValue { $0 })
    }

    @Test func aCancelledCallerIsReleasedAtOnce() async throws {
        let stuck = Stuck()
        defer { stuck.release() }
        let caller = Task { try await withTimeout(.seconds(60), { await stuck.wait() }) { Expired.expired } }
        try await Task.sleep(for: .milliseconds(50))
        caller.cancel()
        await #expect(throws: CancellationError.self) { try await caller.value }
    }
}

/// `FirstOutcome` ends the state listener's wait at its first failure, whoever sees it.
@Suite struct FirstOutcomeTests {
    struct Failed: Error, Equatable { let by: String }

    @Test func theFirstFinishDecidesForEveryWaiterAndLaterOnesChangeNothing() async throws {
        let outcome = FirstOutcome<Int>()
        let early = Task { try await outcome.value() }
        try await Task.sleep(for: .milliseconds(20))
        outcome.finish(.failure(Failed(by: "heartbeat")))
        outcome.finish(.success(1))
        await #expect(throws: Failed(by: "heartbeat")) { try await early.value }
        // Asked after the decision: the same answer at once.
        await #expect(throws: Failed(by: "heartbeat")) { try await outcome.value() }
    }

    @Test func aCancelledWaiterIsReleasedAtOnce() async throws {
        let outcome = FirstOutcome<Int>()
        let waiter = Task { try await outcome.value() }
        try await Task.sleep(for: .milliseconds(20))
        waiter.cancel()
        await #expect(throws: CancellationError.self) { try await waiter.value }
    }
}
