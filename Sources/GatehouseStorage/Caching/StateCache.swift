import Foundation
import GatehouseCore
import NIOConcurrencyHelpers
import Synchronization

/// Sessions and cookie jars held in memory on this replica, so that a request in the steady state reads no
/// database. Bounded, and never trusted beyond what the store says:
///
/// - every write through this replica evicts or replaces the entry; a change made elsewhere arrives as an
///   invalidation (PostgreSQL `NOTIFY`, see `StateInvalidationListener`);
/// - while invalidations cannot be relied on (the listening connection is down or late), the cache is *untrusted*:
///   every read goes to the store and nothing is kept, until the connection is back and the cache has been emptied;
/// - a load that raced an invalidation of the same state is not kept (the `epoch` check), so a copy read before a
///   change can never outlive the change's invalidation;
/// - an entry is at most `maximumAge` old, a bound even if an invalidation were lost.
///
/// A jar may also change here first (`changeJar`, for answers the data plane serves on an event loop, which must
/// not wait for the store): the change is in the cached jar at once and waits in `pendingJars` until the gateway's
/// write-behind has stored it. Whatever loads a jar from the store replays the changes still waiting on top, so a
/// reload never loses one; a crash loses the changes that had not been written yet.
public final class StateCache: Sendable {
    public typealias JarChange = @Sendable (inout CookieJar) -> Void

    struct Entry<Value: Sendable>: Sendable {
        var value: Value
        var loadedAt: ContinuousClock.Instant
    }

    struct State: Sendable {
        var sessions: [String: Entry<Session>] = [:]
        /// `nil` values: the session has no jar yet (an empty jar).
        var jars: [String: Entry<CookieJar?>] = [:]
        /// The session each app host's grant stands for, by `grantKey`. A grant never changes while its session
        /// lasts and ends with it, so a remembered one is as good as the store's answer: the session itself is still
        /// read from `sessions`, where an ended one is not.
        var grants: [String: Entry<String>] = [:]
        /// The hashes of tokens (session cookies, app hosts' grants) that found a session here before: each token is
        /// hashed once, not on every request. A token's hash never changes, so an entry cannot go stale; one whose
        /// session ended finds nothing in `sessions` or `grants`.
        var tokenHashes: [String: String] = [:]
        var epoch: UInt64 = 0
        /// Jar changes made here and not yet written to the store, oldest first, by session.
        var pendingJars: [String: [JarChange]] = [:]
        var pendingJarCount = 0
        /// Called once no change of the session waits for the store any more (`whenJarStored`).
        var jarStoredWaiters: [String: [@Sendable () -> Void]] = [:]
        var trusted: Bool
        var hits = 0
        var misses = 0
        /// Times the cache stopped being trusted.
        var bypasses = 0
    }

    private let state: NIOLockedValueBox<State>
    /// Moves with every change of what the cache holds (`changing`): a thread's copy of a member's state
    /// (`members`) read at another version is not used.
    private let version = Atomic<UInt64>(0)
    /// Each thread's copies of the members it served, by token (`member(token:…)`), with the version they were read
    /// at: the data plane's event loops read their own copy on most pages rather than take `state`'s lock.
    private let members = ThreadMemo<MemberKey, KeptMember>(limit: 1024)
    /// Reads answered from a thread's copy (counted as hits with `State.hits`).
    private let memoHits = Atomic<Int>(0)
    let capacity: Int
    let maximumAge: Duration
    /// Rings each time jar changes start waiting for the store where none waited: the write-behind's cue, so that
    /// it sleeps while nothing waits rather than looking every few milliseconds.
    public let jarChangesWaiting: AsyncStream<Void>
    private let ring: AsyncStream<Void>.Continuation

    /// `trusted`: whether the cache may serve from the start (a single process on SQLite); a PostgreSQL replica
    /// starts untrusted and is trusted once its listener runs.
    public init(capacity: Int = 50_000, maximumAge: Duration = .seconds(60), trusted: Bool) {
        self.capacity = capacity
        self.maximumAge = maximumAge
        self.state = NIOLockedValueBox(State(trusted: trusted))
        (jarChangesWaiting, ring) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    // MARK: - Reading

    /// Where a load starts from: pass it back to `keep`, which refuses if an invalidation happened since.
    func snapshot() -> UInt64 {
        state.withLockedValue { $0.epoch }
    }

    public func session(_ id: String, now: ContinuousClock.Instant = .now) -> Session? {
        state.withLockedValue { session(id, in: &$0, now: now) }
    }

    /// `.some(nil)`: known to have no jar.
    public func jar(_ sessionID: String, now: ContinuousClock.Instant = .now) -> CookieJar?? {
        state.withLockedValue { jar(sessionID, in: $0, now: now) }
    }

    /// The session an app host's grant (by its token's hash) stands for, when this replica has looked it up before.
    public func grantedSession(tokenHash: String, slug: String, now: ContinuousClock.Instant = .now) -> String? {
        state.withLockedValue { grantedSession(tokenHash: tokenHash, slug: slug, in: $0, now: now) }
    }

    static func grantKey(_ tokenHash: String, _ slug: String) -> String { slug + " " + tokenHash }

    /// A member's state as the data plane reads it on an event loop: the session and its jar (`nil`: none yet).
    public struct Member: Sendable {
        public let session: Session
        public let jar: CookieJar?
    }

    /// The session a session cookie's token stands for and its jar, when both are here and fewer than
    /// `pendingJarLimit` jar changes wait for the store; `hash` gives the token's hash (the session's id), computed
    /// only for a token that has not found its session here before. One look at the cache (one lock, which the event loops
    /// would otherwise take four times a page and contend on), a second only for a token not seen here before.
    /// On an event loop the thread's own copy answers while nothing in the cache changed (`ThreadMemo`).
    public func member(token: String, hash: (String) -> String, pendingJarLimit: Int, now: ContinuousClock.Instant = .now) -> Member? {
        member(.token(token), now: now, pendingJarLimit: pendingJarLimit) {
            found(byToken: token, hash: hash) { state, tokenHash in member(tokenHash, in: &state, pendingJarLimit: pendingJarLimit, now: now) }
        }
    }

    /// `member(token:…)` for an app host's grant.
    public func member(grant: String, slug: String, hash: (String) -> String, pendingJarLimit: Int, now: ContinuousClock.Instant = .now) -> Member? {
        member(.grant(grant, slug: slug), now: now, pendingJarLimit: pendingJarLimit) {
            found(byToken: grant, hash: hash) { state, tokenHash in
                guard let sessionID = grantedSession(tokenHash: tokenHash, slug: slug, in: state, now: now) else { return nil }
                return member(sessionID, in: &state, pendingJarLimit: pendingJarLimit, now: now)
            }
        }
    }

    /// What `find` finds by the token's hash, looked for under the lock; the hash is remembered once it found
    /// something (never for a guess).
    private func found<Value>(byToken token: String, hash: (String) -> String, _ find: (inout State, String) -> Value?) -> Value? {
        let known = state.withLockedValue { state -> Value?? in
            guard let tokenHash = state.tokenHashes[token] else { return .none }
            return .some(find(&state, tokenHash))
        }
        if let known { return known }
        let tokenHash = hash(token)
        return state.withLockedValue { state in
            guard let value = find(&state, tokenHash) else { return nil }
            if state.trusted {
                if state.tokenHashes.count >= max(1, capacity / 10) { state.tokenHashes = [:] }
                state.tokenHashes[token] = tokenHash
            }
            return value
        }
    }

    /// A change of what the cache holds, under the lock: every thread's copies read before it are not used again.
    private func changing<Result>(_ body: (inout State) -> Result) -> Result {
        state.withLockedValue { state in
            defer { version.add(1, ordering: .releasing) }
            return body(&state)
        }
    }

    private enum MemberKey: Hashable, Sendable {
        case token(String)
        case grant(String, slug: String)
    }

    private struct KeptMember: Sendable {
        let member: Member
        let version: UInt64
        /// Its session's or its jar's entry is older than `maximumAge` from then on.
        let goodUntil: ContinuousClock.Instant
        /// The jar changes that waited for the store then.
        let pendingJarChanges: Int
    }

    /// This thread's copy for `key` while nothing changed since it was read, else `look` under the lock (kept as
    /// this thread's copy when it finds a member).
    private func member(_ key: MemberKey, now: ContinuousClock.Instant, pendingJarLimit: Int, look: () -> KeptMember?) -> Member? {
        if let kept = members[key], kept.version == version.load(ordering: .acquiring) {
            guard now < kept.goodUntil, kept.pendingJarChanges < pendingJarLimit else { return nil }
            memoHits.add(1, ordering: .relaxed)
            return kept.member
        }
        guard let found = look() else {
            members.forget(key)
            return nil
        }
        members.remember(found, for: key)
        return found.member
    }

    private func session(_ id: String, in state: inout State, now: ContinuousClock.Instant) -> Session? {
        guard state.trusted, let entry = state.sessions[id], now - entry.loadedAt < maximumAge else {
            state.misses += 1
            return nil
        }
        state.hits += 1
        return entry.value
    }

    private func jar(_ sessionID: String, in state: State, now: ContinuousClock.Instant) -> CookieJar?? {
        guard state.trusted, let entry = state.jars[sessionID], now - entry.loadedAt < maximumAge else { return .none }
        return .some(entry.value)
    }

    private func grantedSession(tokenHash: String, slug: String, in state: State, now: ContinuousClock.Instant) -> String? {
        guard state.trusted, let entry = state.grants[Self.grantKey(tokenHash, slug)], now - entry.loadedAt < maximumAge else { return nil }
        return entry.value
    }

    /// The member, with the version of the cache it was read at and until when its entries are young enough.
    private func member(_ sessionID: String, in state: inout State, pendingJarLimit: Int, now: ContinuousClock.Instant) -> KeptMember? {
        guard state.pendingJarCount < pendingJarLimit, let session = session(sessionID, in: &state, now: now),
            case .some(let jar) = jar(sessionID, in: state, now: now), let loaded = state.sessions[sessionID]?.loadedAt,
            let jarLoaded = state.jars[sessionID]?.loadedAt
        else { return nil }
        // Read under the lock, which every change holds while it moves the version.
        return KeptMember(
            member: Member(session: session, jar: jar), version: version.load(ordering: .relaxed), goodUntil: min(loaded, jarLoaded) + maximumAge,
            pendingJarChanges: state.pendingJarCount)
    }

    // MARK: - Keeping

    func keep(grant tokenHash: String, slug: String, sessionID: String, now: ContinuousClock.Instant = .now) {
        changing { state in
            guard state.trusted else { return }
            makeRoom(&state, now: now)
            state.grants[Self.grantKey(tokenHash, slug)] = Entry(value: sessionID, loadedAt: now)
        }
    }

    func keep(_ session: Session, since epoch: UInt64, now: ContinuousClock.Instant = .now) {
        changing { state in
            guard state.trusted, state.epoch == epoch else { return }
            makeRoom(&state, now: now)
            state.sessions[session.id] = Entry(value: session, loadedAt: now)
        }
    }

    /// Keeps a jar as the store gave it, with the changes still waiting for the store replayed on top. A load that
    /// raced an invalidation or a write-behind leaves no entry at all (a copy kept from before might lack a change).
    func keep(jar: CookieJar?, sessionID: String, since epoch: UInt64, now: ContinuousClock.Instant = .now) {
        changing { state in
            guard state.trusted, state.epoch == epoch else {
                state.jars[sessionID] = nil
                return
            }
            makeRoom(&state, now: now)
            var jar = jar
            if let pending = state.pendingJars[sessionID] {
                var changed = jar ?? CookieJar()
                for change in pending { change(&changed) }
                jar = changed
            }
            state.jars[sessionID] = Entry(value: jar, loadedAt: now)
        }
    }

    // MARK: - Changing a jar first here

    /// Applies `change` to the session's cached jar (if it is cached) and keeps it for the write-behind.
    public func changeJar(_ sessionID: String, _ change: @escaping JarChange) {
        let first = changing { state in Self.queue(change, for: sessionID, in: &state) }
        if first { ring.yield() }
    }

    /// `true` when no change waited before this one.
    private static func queue(_ change: @escaping JarChange, for sessionID: String, in state: inout State) -> Bool {
        if var entry = state.jars[sessionID] {
            var jar = entry.value ?? CookieJar()
            change(&jar)
            entry.value = jar
            state.jars[sessionID] = entry
        }
        state.pendingJars[sessionID, default: []].append(change)
        state.pendingJarCount += 1
        return state.pendingJarCount == 1
    }

    /// Applies `change` as `changeJar` does, but only while earlier changes of the session wait for the store:
    /// `false` when none wait (the caller writes through). A change written through while older ones wait would be
    /// overtaken by them when the write-behind stores them; queued behind them, it keeps its place.
    public func changeJarAfterPending(_ sessionID: String, _ change: @escaping JarChange) -> Bool {
        changing { state in
            guard state.pendingJars[sessionID]?.isEmpty == false else { return false }
            _ = Self.queue(change, for: sessionID, in: &state)  // others wait: the write-behind was told
            return true
        }
    }

    /// How many jar changes wait for the store.
    public var pendingJarChanges: Int { state.withLockedValue { $0.pendingJarCount } }

    /// The changes waiting for the store, by session (they stay pending until `jarWritten`).
    public func pendingJarWrites() -> [(sessionID: String, changes: [JarChange])] {
        state.withLockedValue { state in state.pendingJars.map { ($0.key, $0.value) } }
    }

    /// The first `count` waiting changes of the session are in the store (or given up). Loads under way when they
    /// were written are not kept (the epoch moves): one may have read the store just before.
    public func jarWritten(_ sessionID: String, count: Int) {
        let stored = changing { state -> [@Sendable () -> Void] in
            guard var pending = state.pendingJars[sessionID] else { return [] }
            let removed = min(count, pending.count)
            pending.removeFirst(removed)
            state.pendingJars[sessionID] = pending.isEmpty ? nil : pending
            state.pendingJarCount -= removed
            state.epoch &+= 1
            guard pending.isEmpty else { return [] }
            return state.jarStoredWaiters.removeValue(forKey: sessionID) ?? []
        }
        for call in stored { call() }
    }

    /// Calls `stored` once no jar change of the session waits for the store (at once if none does): an answer that
    /// changed the jar goes out only then where another replica may serve the member's next request.
    public func whenJarStored(_ sessionID: String, _ stored: @escaping @Sendable () -> Void) {
        let waits = state.withLockedValue { state -> Bool in
            guard state.pendingJars[sessionID]?.isEmpty == false else { return false }
            state.jarStoredWaiters[sessionID, default: []].append(stored)
            return true
        }
        if !waits { stored() }
    }

    /// At capacity, the oldest tenth of the entries goes (whole tenths, so the sort is rare).
    private func makeRoom(_ state: inout State, now: ContinuousClock.Instant) {
        guard state.sessions.count + state.jars.count + state.grants.count >= capacity else { return }
        let cutoff = max(1, capacity / 10)
        let oldestSessions = state.sessions.sorted { $0.value.loadedAt < $1.value.loadedAt }.prefix(cutoff / 2 + 1)
        for (id, _) in oldestSessions { state.sessions[id] = nil }
        let oldestJars = state.jars.sorted { $0.value.loadedAt < $1.value.loadedAt }.prefix(cutoff / 2 + 1)
        for (id, _) in oldestJars { state.jars[id] = nil }
        if state.grants.count >= cutoff { state.grants = [:] }
    }

    // MARK: - Invalidating

    /// Forgets a session and its jar (the session changed or ended).
    public func invalidate(sessionID: String) {
        changing { state in
            state.epoch &+= 1
            state.sessions[sessionID] = nil
            state.jars[sessionID] = nil
        }
    }

    public func invalidate(jarOf sessionID: String) {
        changing { state in
            state.epoch &+= 1
            state.jars[sessionID] = nil
        }
    }

    /// Forgets every session of a member (a registration raised them all in the store).
    public func invalidate(sub: String) {
        changing { state in
            state.epoch &+= 1
            state.sessions = state.sessions.filter { $0.value.value.identity.sub != sub }
        }
    }

    /// Empties the cache and sets whether it may serve: `false` while invalidations may be missed, `true` once
    /// they flow again (emptied first, since some may have been missed meanwhile).
    public func reset(trusted: Bool) {
        changing { state in
            state.epoch &+= 1
            state.sessions = [:]
            state.jars = [:]
            state.grants = [:]
            state.tokenHashes = [:]
            if state.trusted && !trusted { state.bypasses += 1 }
            state.trusted = trusted
        }
    }

    public var isTrusted: Bool { state.withLockedValue { $0.trusted } }

    /// Entries held, session reads answered from memory and from the store, and times the cache was bypassed
    /// because invalidations could not be relied on, since start.
    public var statistics: (entries: Int, hits: Int, misses: Int, bypasses: Int) {
        let memoHits = memoHits.load(ordering: .relaxed)
        return state.withLockedValue { ($0.sessions.count + $0.jars.count + $0.grants.count, $0.hits + memoHits, $0.misses, $0.bypasses) }
    }
}
