/// When a member session's `/sync` runs: while at least one of the member's pages listens, and for a grace after the
/// last one leaves (a page reloading or going to the next room is back within it); after a failure the homeserver
/// is asked again later, longer each time; a token the homeserver no longer knows ends it. A machine: an event in,
/// one action out, for the loop to carry out.
public struct SyncLoopState: Sendable, Equatable {
    public enum Phase: Sendable, Equatable {
        /// Not syncing: no listener, or the grace after the last one ran out.
        case idle
        /// Syncing; `failures` in a row so far.
        case running(failures: Int)
        /// Syncing, no listener left: it stops when the grace ends unless one comes back.
        case lingering(failures: Int)
        /// The token was refused: no sync will ever run on it again.
        case ended
    }

    public enum Event: Sendable, Equatable {
        case listenerJoined
        case listenerLeft
        case graceEnded
        case syncAnswered
        case syncFailed(transient: Bool)
    }

    public enum Action: Sendable, Equatable {
        case none
        /// Start the loop (the first sync resumes from the loop's last `since`, if any).
        case start
        /// Sync again at once.
        case syncAgain
        /// Sync again after waiting.
        case retry(afterSeconds: Int)
        /// Wait `graceSeconds`, then report `graceEnded`.
        case startGrace
        /// Stop the loop (keep `since` for the next start).
        case stop
        /// The session's device is gone: stop and tell the listeners.
        case end
    }

    public private(set) var phase: Phase = .idle
    public private(set) var listeners = 0

    public static let graceSeconds = 30
    public static let longestRetrySeconds = 30

    public init() {}

    public mutating func handle(_ event: Event) -> Action {
        switch (event, phase) {
        case (_, .ended):
            if event == .listenerJoined { listeners += 1 }
            if event == .listenerLeft { listeners = max(0, listeners - 1) }
            return event == .listenerJoined ? .end : .none
        case (.listenerJoined, .idle):
            listeners += 1
            phase = .running(failures: 0)
            return .start
        case (.listenerJoined, .running):
            listeners += 1
            return .none
        case (.listenerJoined, .lingering(let failures)):
            listeners += 1
            phase = .running(failures: failures)
            return .none
        case (.listenerLeft, .running(let failures)):
            listeners = max(0, listeners - 1)
            guard listeners == 0 else { return .none }
            phase = .lingering(failures: failures)
            return .startGrace
        case (.listenerLeft, _):
            listeners = max(0, listeners - 1)
            return .none
        case (.graceEnded, .lingering):
            phase = .idle
            return .stop
        case (.graceEnded, _):
            return .none
        case (.syncAnswered, .running), (.syncAnswered, .lingering):
            phase = phase.with(failures: 0)
            return .syncAgain
        case (.syncFailed(let transient), .running(let failures)), (.syncFailed(let transient), .lingering(let failures)):
            guard transient else {
                phase = .ended
                return .end
            }
            phase = phase.with(failures: failures + 1)
            return .retry(afterSeconds: min(Self.longestRetrySeconds, 1 << min(failures, 5)))
        case (.syncAnswered, .idle), (.syncFailed, .idle):
            // A sync that was under way when the loop stopped: nothing more.
            return .none
        }
    }
}

extension SyncLoopState.Phase {
    func with(failures: Int) -> Self {
        switch self {
        case .running: .running(failures: failures)
        case .lingering: .lingering(failures: failures)
        default: self
        }
    }
}
