import NIOConcurrencyHelpers
import Synchronization

/// Where a graceful shutdown is: once it has begun, `/readyz` fails, so that a load balancer stops sending requests,
/// and every answer says `Connection: close`; when the drain is over, relayed WebSockets close as "going away" before
/// the server's own shutdown closes them plainly.
public final class Draining: Sendable {
    private struct State {
        /// When draining began; `nil` until then.
        var began: ContinuousClock.Instant?
        /// Relayed WebSockets still open.
        var relays = 0
        /// The drain is over: relays are to close.
        var relaysClosing = false
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter = 0
    }

    private let state = NIOLockedValueBox(State())
    /// Whether draining began, read by every answer without the lock (which the event loops would contend on).
    private let begun = Atomic(false)

    public init() {}

    public var hasBegun: Bool { begun.load(ordering: .acquiring) }

    /// How long ago draining began, if it has.
    var elapsed: Duration? { state.withLockedValue { $0.began.map { ContinuousClock.now - $0 } } }

    /// Counts a relayed WebSocket for as long as `body` runs.
    func relaying<T>(_ body: () async throws -> T) async rethrows -> T {
        state.withLockedValue { $0.relays += 1 }
        defer { state.withLockedValue { $0.relays -= 1 } }
        return try await body()
    }

    var openRelays: Int { state.withLockedValue { $0.relays } }

    func begin() {
        state.withLockedValue { $0.began = .now }
        begun.store(true, ordering: .releasing)
    }

    /// The drain is over: what waits (`wait()`) goes on, and relays close.
    func closeRelays() {
        let waiters = state.withLockedValue { state -> [CheckedContinuation<Void, Never>] in
            state.relaysClosing = true
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns when the drain is over (`closeRelays()`), or at once when the calling task is cancelled.
    func wait() async {
        let id = state.withLockedValue { state -> Int in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let now = state.withLockedValue { state -> Bool in
                    guard !state.relaysClosing, !Task.isCancelled else { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            state.withLockedValue { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }
}
