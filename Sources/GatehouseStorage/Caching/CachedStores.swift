import Foundation
import GatehouseCore
import Logging
import ServiceLifecycle

/// A session store read through this replica's `StateCache`. Writes go to the store first and then evict the entry
/// (the store may have merged them: a registration's level is kept), so the next read loads what the store holds.
/// A session loaded from the store brings its jar along when `jars` is given: the data plane serves only sessions
/// whose jar is cached too, and a member's first app request should not have to wait for a second load.
public struct CachedSessionStore: SessionStore {
    let store: any SessionStore
    let cache: StateCache
    let jars: CachedCookieJarStore?

    public init(store: any SessionStore, cache: StateCache, jars: CachedCookieJarStore? = nil) {
        self.store = store
        self.cache = cache
        self.jars = jars
    }

    public func find(id: String) async throws -> Session? {
        if let session = cache.session(id) { return session }
        return try await findStored(id: id)
    }

    public func findStored(id: String) async throws -> Session? {
        let epoch = cache.snapshot()
        guard let session = try await store.find(id: id) else { return nil }
        cache.keep(session, since: epoch)
        if let jars, case .none = cache.jar(id) { _ = try await jars.load(sessionID: id) }
        return session
    }

    public func insert(_ session: Session) async throws {
        try await store.insert(session)
        cache.invalidate(sessionID: session.id)
    }

    public func update(_ session: Session) async throws {
        try await store.update(session)
        cache.invalidate(sessionID: session.id)
    }

    public func delete(id: String) async throws {
        try await store.delete(id: id)
        cache.invalidate(sessionID: id)
    }

    public func end(id: String, until: Date, timedOutMember: String?) async throws {
        try await store.end(id: id, until: until, timedOutMember: timedOutMember)
        cache.invalidate(sessionID: id)
    }

    public func ended(id: String, now: Date) async throws -> EndedSession? {
        try await store.ended(id: id, now: now)
    }

    public func setFrame(_ change: FramePreferences, sessionID: String) async throws {
        try await store.setFrame(change, sessionID: sessionID)
        cache.invalidate(sessionID: sessionID)
    }

    public func setAssurance(_ assurance: Assurance, sessionID: String) async throws {
        try await store.setAssurance(assurance, sessionID: sessionID)
        cache.invalidate(sessionID: sessionID)
    }

    public func sessions(subject: String, now: Date, idleCutoff: Date) async throws -> [Session] {
        try await store.sessions(subject: subject, now: now, idleCutoff: idleCutoff)
    }

    public func levels(now: Date, idleCutoff: Date) async throws -> [String: (sessions: Int, members: Int)] {
        try await store.levels(now: now, idleCutoff: idleCutoff)
    }

    public func countActive(now: Date, idleCutoff: Date) async throws -> Int {
        try await store.countActive(now: now, idleCutoff: idleCutoff)
    }

    public func deleteExpired(now: Date, idleCutoff: Date) async throws -> [String] {
        let removed = try await store.deleteExpired(now: now, idleCutoff: idleCutoff)
        for id in removed { cache.invalidate(sessionID: id) }
        return removed
    }

    public func deleteProviderSessions(subject: String?, providerSessionID: String?) async throws -> [Session] {
        let removed = try await store.deleteProviderSessions(subject: subject, providerSessionID: providerSessionID)
        for session in removed { cache.invalidate(sessionID: session.id) }
        return removed
    }

    public func withExclusiveRefresh<T: Sendable>(sessionID: String, _ body: @Sendable @escaping () async throws -> T) async throws -> T {
        try await store.withExclusiveRefresh(sessionID: sessionID, body)
    }
}

/// A jar store read through the `StateCache`; a jar written here is kept as written.
public struct CachedCookieJarStore: CookieJarStore {
    let store: any CookieJarStore
    let cache: StateCache

    public init(store: any CookieJarStore, cache: StateCache) {
        self.store = store
        self.cache = cache
    }

    public func load(sessionID: String) async throws -> CookieJar? {
        if case .some(let jar) = cache.jar(sessionID) { return jar }
        let epoch = cache.snapshot()
        let jar = try await store.load(sessionID: sessionID)
        cache.keep(jar: jar, sessionID: sessionID, since: epoch)
        return jar
    }

    public func modify(sessionID: String, _ change: @Sendable @escaping (inout CookieJar) -> Void) async throws -> CookieJar {
        let epoch = cache.snapshot()
        let jar = try await store.modify(sessionID: sessionID, change)
        cache.keep(jar: jar, sessionID: sessionID, since: epoch)
        return jar
    }

    public func delete(sessionID: String) async throws {
        try await store.delete(sessionID: sessionID)
        cache.invalidate(jarOf: sessionID)
    }
}

/// Registrations whose completion evicts the member's cached sessions (the store raised their level).
public struct CachedRegistrationStore: RegistrationStore {
    let store: any RegistrationStore

    public func directoryEntries(limit: Int) async throws -> [DirectoryEntry] { try await store.directoryEntries(limit: limit) }
    let cache: StateCache

    public func account(sub: String) async throws -> RegisteredAccount? { try await store.account(sub: sub) }
    public func isUsernameTaken(_ username: String, for sub: String, claimsSince: Date) async throws -> Bool {
        try await store.isUsernameTaken(username, for: sub, claimsSince: claimsSince)
    }

    public func claimUsername(_ username: String, for sub: String, at date: Date, claimsSince: Date) async throws -> Bool {
        try await store.claimUsername(username, for: sub, at: date, claimsSince: claimsSince)
    }

    public func register(_ registration: Registration) async throws -> RegisterOutcome {
        let outcome = try await store.register(registration)
        cache.invalidate(sub: registration.sub)
        return outcome
    }

    public func registerExisting(sub: String, username: String, chatUserID: String, at date: Date) async throws -> RegisterOutcome {
        let outcome = try await store.registerExisting(sub: sub, username: username, chatUserID: chatUserID, at: date)
        cache.invalidate(sub: sub)
        return outcome
    }

    public func lookup(_ text: String) async throws -> MemberRegistration? { try await store.lookup(text) }
    public func pinHash(sub: String) async throws -> String? { try await store.pinHash(sub: sub) }

    public func updateAccount(sub: String, displayName: String?, discoverability: Discoverability?, phoneNumber: PhoneNumber?) async throws {
        try await store.updateAccount(sub: sub, displayName: displayName, discoverability: discoverability, phoneNumber: phoneNumber)
    }

    public func unregister(sub: String) async throws -> Bool {
        let removed = try await store.unregister(sub: sub)
        cache.invalidate(sub: sub)
        return removed
    }

    public func dueForProvisioning(now: Date, maximumAttempts: Int, limit: Int) async throws -> [PendingProvisioning] {
        try await store.dueForProvisioning(now: now, maximumAttempts: maximumAttempts, limit: limit)
    }
    public func markProvisioned(sub: String, at date: Date) async throws { try await store.markProvisioned(sub: sub, at: date) }
    public func markProvisioningFailed(sub: String, attempts: Int, nextAttemptAt: Date, error: String) async throws {
        try await store.markProvisioningFailed(sub: sub, attempts: attempts, nextAttemptAt: nextAttemptAt, error: error)
    }
    public func provisioningBacklog(maximumAttempts: Int) async throws -> (waiting: Int, failed: Int) {
        try await store.provisioningBacklog(maximumAttempts: maximumAttempts)
    }
}

/// Grants read through the cache: an app host's requests find their session without the store, which lets the data
/// plane serve them.
public struct CachedHostMountStore: HostMountStore {
    let store: any HostMountStore
    let cache: StateCache

    public func insert(_ handoff: AppHandoff) async throws { try await store.insert(handoff) }
    public func takeHandoff(codeHash: String) async throws -> AppHandoff? { try await store.takeHandoff(codeHash: codeHash) }

    public func insertGrant(tokenHash: String, sessionID: String, slug: String) async throws {
        try await store.insertGrant(tokenHash: tokenHash, sessionID: sessionID, slug: slug)
        cache.keep(grant: tokenHash, slug: slug, sessionID: sessionID)
    }

    public func sessionID(grantTokenHash: String, slug: String) async throws -> String? {
        if let kept = cache.grantedSession(tokenHash: grantTokenHash, slug: slug) { return kept }
        guard let sessionID = try await store.sessionID(grantTokenHash: grantTokenHash, slug: slug) else { return nil }
        cache.keep(grant: grantTokenHash, slug: slug, sessionID: sessionID)
        return sessionID
    }

    public func grantedSlugs(sessionID: String) async throws -> [String] { try await store.grantedSlugs(sessionID: sessionID) }
    public func deleteExpiredHandoffs(now: Date) async throws -> Int { try await store.deleteExpiredHandoffs(now: now) }
}

extension Stores {
    /// A cache for these stores: trusted from the start for a single process's SQLite, and on PostgreSQL only
    /// while `invalidations` (to run as a service) hears every replica's changes.
    public func makeCache(logger: Logger) -> (cache: StateCache, invalidations: (any Service)?) {
        guard let shared else { return (StateCache(trusted: true), nil) }
        let cache = StateCache(trusted: false)
        return (cache, StateInvalidationListener(database: shared, cache: cache, catalogChanges: catalogChanges, logger: logger))
    }

    /// These stores with sessions, jars, registrations and app hosts' grants read and invalidated through `cache`.
    public func cached(by cache: StateCache) -> Stores {
        var stores = self
        let cachedJars = CachedCookieJarStore(store: jars, cache: cache)
        stores.sessions = CachedSessionStore(store: sessions, cache: cache, jars: cachedJars)
        stores.jars = cachedJars
        stores.registrations = CachedRegistrationStore(store: registrations, cache: cache)
        stores.hostMounts = CachedHostMountStore(store: hostMounts, cache: cache)
        return stores
    }
}
