/// Runs `body`; once `timeout` has passed first, cancels it and throws what `expired` returns (which may also act,
/// say close the connection `body` waits on).
func withTimeout<T: Sendable>(
    _ timeout: Duration, _ body: @Sendable @escaping () async throws -> T, expired: @Sendable @escaping () async -> any Error
) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: timeout)
            throw await expired()
        }
        defer { group.cancelAll() }
        return try await group.next()!
    }
}
