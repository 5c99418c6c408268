import Foundation

/// Runs `body`; once `timeout` has passed first, cancels it and throws what `expired` returns (which may also act,
/// say close the connection `body` waits on). A cancelled caller gets `CancellationError` at once.
///
/// The caller never waits beyond the deadline for `body` to notice its cancellation: `body` runs as a task of its
/// own, left to end by itself. A task group would wait for it, and some waits never end: a query written to a
/// PostgreSQL connection that has just closed is never answered (postgres-nio drops it with the closed channel), so
/// a deadline built on a task group held the request, and the server's shutdown behind it, for ever.
public func withTimeout<T: Sendable>(
    _ timeout: Duration, _ body: @Sendable @escaping () async throws -> T, expired: @Sendable @escaping () async -> any Error
) async throws -> T {
    let race = FirstOutcome<T>()
    let tasks = [
        Task { race.finish(await Result(catching: body)) },
        Task {
            guard (try? await Task.sleep(for: timeout)) != nil else { return }  // the body came first
            race.finish(.failure(await expired()))
        },
    ]
    defer { for task in tasks { task.cancel() } }
    return try await race.value()
}

/// An outcome decided once, by whichever of several parties comes first; those who await it never wait for the
/// others to notice they lost (they are tasks of their own, cancelled and left to end by themselves).
public final class FirstOutcome<T: Sendable>: Sendable {
    private struct State {
        var waiting: [CheckedContinuation<T, any Error>] = []
        var outcome: Result<T, any Error>?
    }

    private let state = Locked(State())

    public init() {}

    /// The first call decides; later ones are ignored.
    public func finish(_ outcome: Result<T, any Error>) {
        let waiting = state.withLockedValue { state -> [CheckedContinuation<T, any Error>] in
            guard state.outcome == nil else { return [] }
            state.outcome = outcome
            defer { state.waiting = [] }
            return state.waiting
        }
        for continuation in waiting { continuation.resume(with: outcome) }
    }

    /// The first outcome, whenever it came. A cancelled waiter decides it: `CancellationError`, at once, for all.
    public func value() async throws -> T {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let decided = state.withLockedValue { state -> Result<T, any Error>? in
                    if state.outcome == nil { state.waiting.append(continuation) }
                    return state.outcome
                }
                if let decided { continuation.resume(with: decided) }
            }
        } onCancel: {
            finish(.failure(CancellationError()))
        }
    }
}

extension Result where Failure == any Error {
    fileprivate init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
