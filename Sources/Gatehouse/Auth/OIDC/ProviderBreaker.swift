import AsyncHTTPClient
import Foundation
import NIOConcurrencyHelpers

/// Stops waiting for a provider that takes connections but does not answer: after `threshold` timeouts in a row,
/// every call fails at once (`OIDCError.providerNotAnswering`) for `pause`; then one call is let through to try it
/// again, and an answer of any kind closes the breaker. A provider that refuses connections fails fast by itself and
/// does not open it. Without it each member would wait out the whole timeout, on every attempt.
public final class ProviderBreaker: Sendable {
    let threshold: Int
    let pause: Duration
    private let state = NIOLockedValueBox(State())

    struct State {
        var timeoutsInARow = 0
        var openUntil: ContinuousClock.Instant?
        var probing = false
    }

    public init(threshold: Int = 2, pause: Duration = .seconds(30)) {
        self.threshold = threshold
        self.pause = pause
    }

    /// Runs `call` unless the breaker is open; counts its timeout or its answer.
    func guarding<T>(_ what: String, _ call: () async throws -> T) async throws -> T {
        let admitted = state.withLockedValue { state -> Bool in
            guard let until = state.openUntil, ContinuousClock.now < until || state.probing else { return true }
            if ContinuousClock.now >= until, !state.probing {
                state.probing = true  // the one call that tries the provider again
                return true
            }
            return false
        }
        guard admitted else { throw OIDCError.providerNotAnswering("\(what): stopped waiting after repeated timeouts") }
        do {
            let result = try await call()
            state.withLockedValue { $0 = State() }
            return result
        } catch {
            let timedOut = Self.isTimeout(error)
            state.withLockedValue { state in
                state.probing = false
                guard timedOut else { return state = State() }
                state.timeoutsInARow += 1
                if state.timeoutsInARow >= threshold || state.openUntil != nil { state.openUntil = .now + pause }
            }
            throw error
        }
    }

    public var isOpen: Bool {
        state.withLockedValue { state in state.openUntil.map { ContinuousClock.now < $0 } ?? false }
    }

    static func isTimeout(_ error: any Error) -> Bool {
        guard let error = error as? HTTPClientError else { return false }
        return error == .deadlineExceeded || error == .readTimeout || error == .connectTimeout
    }
}
