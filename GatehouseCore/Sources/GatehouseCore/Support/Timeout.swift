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
    let race = DeadlineRace<T>()
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { continuation in
            race.start(
                continuation,
                tasks: [
                    Task { race.finish(await Result(catching: body)) },
                    Task {
                        guard (try? await Task.sleep(for: timeout)) != nil else { return }  // the body came first
                        race.finish(.failure(await expired()))
                    },
                ])
        }
    } onCancel: {
        race.finish(.failure(CancellationError()))
    }
}

/// The first outcome of a `withTimeout`, handed to the waiting caller once; the other task is cancelled.
private final class DeadlineRace<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<T, any Error>?
        var outcome: Result<T, any Error>?
        var tasks: [Task<Void, Never>] = []
    }

    private let state = Locked(State())

    func start(_ continuation: CheckedContinuation<T, any Error>, tasks: [Task<Void, Never>]) {
        let decided = state.withLockedValue { state -> Result<T, any Error>? in
            state.tasks = tasks
            guard let outcome = state.outcome else {
                state.continuation = continuation
                return nil
            }
            return outcome
        }
        if let decided {
            for task in tasks { task.cancel() }
            continuation.resume(with: decided)
        }
    }

    /// The first call decides; later ones are ignored.
    func finish(_ outcome: Result<T, any Error>) {
        let (continuation, tasks) = state.withLockedValue { state -> (CheckedContinuation<T, any Error>?, [Task<Void, Never>]) in
            guard state.outcome == nil else { return (nil, []) }
            state.outcome = outcome
            defer { state.continuation = nil }
            return (state.continuation, state.tasks)
        }
        for task in tasks { task.cancel() }
        continuation?.resume(with: outcome)
    }
}

extension Result where Failure == any Error {
    fileprivate init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
