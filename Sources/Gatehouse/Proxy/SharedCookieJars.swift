import Foundation
import GatehouseCore
import GatehouseStorage
import NIOConcurrencyHelpers

/// The jars of all sessions, changed one request at a time per session: two responses setting cookies at once for
/// the same member must not overwrite each other's cookies.
public actor SharedCookieJars {
    let store: any CookieJarStore
    /// The domains cookies may be set for: the allowlist's, which a reload of the configuration may change.
    private let domainPolicy: NIOLockedValueBox<CookieDomainPolicy>
    /// Where the data plane's changes wait for the store (`JarWriteBehind`), when there is a cache.
    let cache: StateCache?
    private var tails: [String: (id: Int, task: Task<Void, Never>)] = [:]
    private var nextID = 0

    public init(store: any CookieJarStore, domains: CookieDomainPolicy = .browser, cache: StateCache? = nil) {
        self.store = store
        domainPolicy = NIOLockedValueBox(domains)
        self.cache = cache
    }

    /// The `Cookie` header for `origin` from the session's jar; reading needs no turn in the queue.
    public func cookieHeader(sessionID: String, for origin: CookieOrigin) async throws -> String? {
        var jar = try await store.load(sessionID: sessionID) ?? CookieJar()
        return jar.cookieHeader(for: origin)
    }

    /// The session's jar as it is now.
    public func jar(sessionID: String) async throws -> CookieJar {
        try await store.load(sessionID: sessionID) ?? CookieJar()
    }

    /// Stores every `Set-Cookie` of one upstream response, after any change already under way for the session.
    /// While changes the data plane made for the session wait for the store, these go behind them in the same queue
    /// (written through before them, they would be overtaken: an older cookie stored over a newer one).
    public func absorb(setCookies headers: [String], from origin: CookieOrigin, sessionID: String) async throws {
        guard !headers.isEmpty else { return }
        let change = absorbing(setCookies: headers, from: origin)
        if let cache, cache.changeJarAfterPending(sessionID, change) { return }
        try await apply([change], sessionID: sessionID)
    }

    /// Stores changes the data plane made in the cache first (`JarWriteBehind`), in turn with every other change.
    public func apply(_ changes: [StateCache.JarChange], sessionID: String) async throws {
        try await inTurn(sessionID) { [store] in
            try await store.modify(sessionID: sessionID) { jar in
                for change in changes { change(&jar) }
            }
        }
    }

    /// The domains cookies may be set for from now on.
    public nonisolated func use(_ domains: CookieDomainPolicy) {
        domainPolicy.withLockedValue { $0 = domains }
    }

    /// A change to a jar for `StateCache.changeJar`: every `Set-Cookie` of one answer, under this gateway's rules.
    public nonisolated func absorbing(setCookies headers: [String], from origin: CookieOrigin) -> StateCache.JarChange {
        let domains = domainPolicy.withLockedValue { $0 }
        return { jar in
            for header in headers { jar.store(setCookie: header, from: origin, domains: domains) }
        }
    }

    public func delete(sessionID: String) async throws {
        try await inTurn(sessionID) { [store] in try await store.delete(sessionID: sessionID) }
    }

    private func inTurn(_ sessionID: String, _ work: @escaping @Sendable () async throws -> Void) async throws {
        let previous = tails[sessionID]?.task
        let operation = Task<Result<Void, any Error>, Never> {
            await previous?.value
            do {
                try await work()
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        nextID += 1
        let id = nextID
        tails[sessionID] = (id, Task { _ = await operation.value })
        let result = await operation.value
        if tails[sessionID]?.id == id { tails[sessionID] = nil }
        try result.get()
    }
}
