import Foundation
import GatehouseCore

/// Where sessions live; one implementation per storage backend.
public protocol SessionStore: Sendable {
    func insert(_ session: Session) async throws
    func find(id: String) async throws -> Session?
    /// The session as the store holds it now, never a cached copy (the default: `find`).
    func findStored(id: String) async throws -> Session?
    /// Replaces the stored session with the same id (tokens, level, last seen).
    func update(_ session: Session) async throws
    func delete(id: String) async throws
    /// Ends a session from another of its member's browsers, or because it ran out of time: deleted with its jar, and
    /// remembered as ended until `until`, so that its cookie is told the session ended rather than sent to a plain
    /// sign-in. `timedOutMember`: the session ran out of time, and a form its member was posting may wait for their
    /// sign-in (`KeptForm`).
    func end(id: String, until: Date, timedOutMember: String?) async throws
    /// What `end` remembers of the session `id`, while it does.
    func ended(id: String, now: Date) async throws -> EndedSession?
    /// Merges the frame choices `change` makes into the session's, leaving everything else as the store holds it.
    func setFrame(_ change: FramePreferences, sessionID: String) async throws
    /// Replaces what the member of the session last proved (a sign-in again, the PIN), leaving everything else as the
    /// store holds it; `update` never writes it.
    func setAssurance(_ assurance: Assurance, sessionID: String) async throws
    /// Removes sessions past their absolute expiry or idle for longer than `idleCutoff` allows, and the memory of
    /// ended sessions past theirs; returns the removed sessions' ids.
    @discardableResult func deleteExpired(now: Date, idleCutoff: Date) async throws -> [String]
    /// The live sessions of `subject` (neither expired nor idle since `idleCutoff`), the most recently active first.
    func sessions(subject: String, now: Date, idleCutoff: Date) async throws -> [Session]
    /// The live sessions and their members, by level (`sso`, `registered`).
    func levels(now: Date, idleCutoff: Date) async throws -> [String: (sessions: Int, members: Int)]
    /// How many sessions are live: neither past their absolute expiry nor idle since `idleCutoff`.
    func countActive(now: Date, idleCutoff: Date) async throws -> Int
    /// Ends what a back-channel logout names: the sessions of the provider session `providerSessionID` (of
    /// `subject` too, when both are given), or every session of `subject`. Returns the sessions it removed.
    func deleteProviderSessions(subject: String?, providerSessionID: String?) async throws -> [Session]
    /// Runs `body` (a token refresh) while no other replica runs one for this session. The default suits a store
    /// that a single process uses: `TokenRefresher` already lines up the requests of one process.
    func withExclusiveRefresh<T: Sendable>(sessionID: String, _ body: @Sendable @escaping () async throws -> T) async throws -> T
}

/// A session ended and still remembered (`SessionStore.end`).
public struct EndedSession: Sendable, Equatable {
    /// Its member, when it ran out of time (not when it was ended on purpose).
    public var timedOutMember: String?

    public init(timedOutMember: String?) { self.timedOutMember = timedOutMember }
}

extension SessionStore {
    public func end(id: String, until: Date) async throws { try await end(id: id, until: until, timedOutMember: nil) }

    public func findStored(id: String) async throws -> Session? { try await find(id: id) }

    public func withExclusiveRefresh<T: Sendable>(sessionID: String, _ body: @Sendable @escaping () async throws -> T) async throws -> T {
        try await body()
    }
}
