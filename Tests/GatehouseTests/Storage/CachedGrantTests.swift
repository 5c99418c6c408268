import Foundation
import GatehouseCore
import Testing

@testable import Gatehouse
@testable import GatehouseStorage

/// App hosts' grants through the state cache, which lets the data plane serve host-mounted apps: a grant is kept for
/// its own app only, once made or looked up, and is never worth more than its session, which the cache keeps (or
/// forgets) on its own.
@Suite struct CachedGrantTests {
    @Test(arguments: StoreBackend.allCases) func grantsAreKeptForTheirAppAndNeverOutliveTheirSession(backend: StoreBackend) async throws {
        try await backend.withStores { stores in
            let cache = StateCache(trusted: true)
            let cached = stores.cached(by: cache)
            let session = SessionLifecycleTests.session(cookie: "c1")
            try await cached.sessions.insert(session)
            try await cached.hostMounts.insertGrant(tokenHash: "grant-1", sessionID: session.id, slug: "wiki")
            #expect(cache.grantedSession(tokenHash: "grant-1", slug: "wiki") == session.id)
            #expect(cache.grantedSession(tokenHash: "grant-1", slug: "other") == nil)
            #expect(try await cached.hostMounts.sessionID(grantTokenHash: "grant-1", slug: "other") == nil)
            #expect(cache.grantedSession(tokenHash: "grant-1", slug: "other") == nil)

            // Emptied (as a replica does when it may have missed invalidations): looked up in the store again, then kept.
            cache.reset(trusted: true)
            #expect(cache.grantedSession(tokenHash: "grant-1", slug: "wiki") == nil)
            #expect(try await cached.hostMounts.sessionID(grantTokenHash: "grant-1", slug: "wiki") == session.id)
            #expect(cache.grantedSession(tokenHash: "grant-1", slug: "wiki") == session.id)

            // The session ends: the grant's session is not in the cache, so nothing is served on it without the store,
            // which no longer knows the grant either.
            _ = try await cached.sessions.find(id: session.id)
            #expect(cache.session(session.id) != nil)
            try await cached.sessions.delete(id: session.id)
            #expect(cache.session(session.id) == nil)
            #expect(try await stores.hostMounts.sessionID(grantTokenHash: "grant-1", slug: "wiki") == nil)

            // An untrusted cache answers nothing and keeps nothing.
            cache.reset(trusted: false)
            let other = SessionLifecycleTests.session(cookie: "c2")
            try await cached.sessions.insert(other)
            try await cached.hostMounts.insertGrant(tokenHash: "grant-2", sessionID: other.id, slug: "wiki")
            #expect(try await cached.hostMounts.sessionID(grantTokenHash: "grant-2", slug: "wiki") == other.id)
            #expect(cache.grantedSession(tokenHash: "grant-2", slug: "wiki") == nil)
        }
    }
}
