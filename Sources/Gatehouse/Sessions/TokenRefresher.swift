import Foundation
import GatehouseCore
import GatehouseStorage

/// Refreshes a session's tokens, one refresh at a time per session: requests that arrive while a refresh runs wait
/// for its result instead of spending the single-use refresh token a second time.
public actor TokenRefresher {
    public typealias Refresh = @Sendable (String) async throws(OIDCError) -> TokenResponse

    private let store: any SessionStore
    private let refresh: Refresh
    private let window: TimeInterval
    private var inFlight: [String: Task<Session, any Error>] = [:]

    public init(store: any SessionStore, window: TimeInterval, refresh: @escaping Refresh) {
        self.store = store
        self.window = window
        self.refresh = refresh
    }

    /// Whether `session`'s access token expires within the refresh window and can be refreshed.
    public nonisolated func needsRefresh(_ session: Session, now: Date = Date()) -> Bool {
        guard session.tokens.refreshToken != nil, let expiry = session.tokens.accessTokenExpiresAt else { return false }
        return expiry.timeIntervalSince(now) < window
    }

    public func refreshed(_ session: Session) async throws -> Session {
        if let running = inFlight[session.id] { return try await running.value }
        let task = Task { try await self.perform(session) }
        inFlight[session.id] = task
        defer { inFlight[session.id] = nil }
        return try await task.value
    }

    /// Under the store's per-session refresh lock, so that one refresh happens across all replicas: whoever waited
    /// for the lock reads the stored session again and finds it refreshed already.
    private func perform(_ session: Session) async throws -> Session {
        try await store.withExclusiveRefresh(sessionID: session.id) { [store, refresh] in
            guard var current = try await store.findStored(id: session.id) else { throw OIDCError.refreshFailed("session is gone") }
            guard self.needsRefresh(current), let refreshToken = current.tokens.refreshToken else { return current }
            let response = try await refresh(refreshToken)
            current.tokens = TokenSet(
                idToken: response.idToken ?? current.tokens.idToken,
                accessToken: response.accessToken,
                refreshToken: response.refreshToken ?? refreshToken,
                accessTokenExpiresAt: response.expiresIn.map { Date().addingTimeInterval(TimeInterval($0)) }
            )
            try await store.update(current)
            return current
        }
    }
}
