import Foundation
import GatehouseCore
import GatehouseStorage

/// Refreshes a session's tokens, one refresh at a time per session: requests that arrive while a refresh runs wait
/// for its result instead of spending the single-use refresh token a second time. With `identify`, each refresh also
/// takes the member's identity (roles, groups, email, phone) as the provider says it now.
public actor TokenRefresher {
    public typealias Refresh = @Sendable (Session, String) async throws(OIDCError) -> TokenResponse
    /// The member after a refresh: the new tokens checked and the identity read again (`OIDCClient.refreshedIdentity`).
    public typealias Identify = @Sendable (Session, TokenResponse) async throws(OIDCError) -> MemberIdentity

    private let store: any SessionStore
    private let refresh: Refresh
    private let identify: Identify?
    private let window: TimeInterval
    private let interval: TimeInterval?
    private var inFlight: [String: Task<Session, any Error>] = [:]

    /// `window`: how long before the access token expires it is refreshed; `interval` (`oidc.refresh_seconds`): how
    /// old the tokens, and so the identity, may grow however long the access token lives.
    public init(
        store: any SessionStore, window: TimeInterval, interval: TimeInterval? = nil, identify: Identify? = nil, refresh: @escaping Refresh
    ) {
        self.store = store
        self.window = window
        self.interval = interval
        self.refresh = refresh
        self.identify = identify
    }

    /// Whether `session` can be refreshed and should be: its access token expires within the refresh window, or its
    /// tokens are `interval` old.
    public nonisolated func needsRefresh(_ session: Session, now: Date = Date()) -> Bool {
        guard session.tokens.refreshToken != nil else { return false }
        if let expiry = session.tokens.accessTokenExpiresAt, expiry.timeIntervalSince(now) < window { return true }
        guard let interval else { return false }
        return now.timeIntervalSince(session.tokens.obtainedAt ?? session.createdAt) >= interval
    }

    /// `evenIfFresh`: refreshed although nothing is due (the member asked to stay signed in, which the provider's
    /// session must allow).
    public func refreshed(_ session: Session, evenIfFresh: Bool = false) async throws -> Session {
        if let running = inFlight[session.id] { return try await running.value }
        let task = Task { try await self.perform(session, evenIfFresh: evenIfFresh) }
        inFlight[session.id] = task
        defer { inFlight[session.id] = nil }
        return try await task.value
    }

    /// Under the store's per-session refresh lock, so that one refresh happens across all replicas: whoever waited
    /// for the lock reads the stored session again and finds it refreshed already.
    private func perform(_ session: Session, evenIfFresh: Bool) async throws -> Session {
        try await store.withExclusiveRefresh(sessionID: session.id) { [store, refresh, identify] in
            guard var current = try await store.findStored(id: session.id) else { throw OIDCError.refreshFailed("session is gone") }
            guard evenIfFresh || self.needsRefresh(current), let refreshToken = current.tokens.refreshToken else { return current }
            let response = try await refresh(current, refreshToken)
            if let identify { current.identity = try await identify(current, response) }
            let now = Date()
            current.tokens = TokenSet(
                idToken: response.idToken ?? current.tokens.idToken,
                accessToken: response.accessToken,
                refreshToken: response.refreshToken ?? refreshToken,
                accessTokenExpiresAt: response.expiresIn.map { now.addingTimeInterval(TimeInterval($0)) },
                obtainedAt: now
            )
            try await store.update(current)
            return current
        }
    }
}
