import NIOConcurrencyHelpers

/// Whether a graceful shutdown has begun: `/readyz` fails from that moment, so that a load balancer stops sending
/// requests, and relayed WebSockets close as "going away" before the server's own shutdown closes them plainly.
public final class Draining: Sendable {
    private struct State {
        /// When draining began; `nil` until then.
        var began: ContinuousClock.Instant?
        /// Relayed WebSockets still open.
        var relays = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter = 0
    }

    private let state = NIOLockedValueBox(State())

    public init() {}

    public var hasBegun: Bool { state.withLockedValue { $0.began != nil } }

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
        let waiters = state.withLockedValue { state -> [CheckedContinuation<Void, Never>] in
            state.began = .now
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns when draining begins, or at once when the calling task is cancelled.
    func wait() async {
        let id = state.withLockedValue { state -> Int in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let now = state.withLockedValue { state -> Bool in
                    guard state.began == nil, !Task.isCancelled else { return true }
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
