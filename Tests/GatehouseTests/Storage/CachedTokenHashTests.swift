import Foundation
import GatehouseCore
import NIOConcurrencyHelpers
import Testing

@testable import Gatehouse
@testable import GatehouseStorage

/// The data plane finds a session by its cookie's token (and an app host's grant by the grant) without hashing the
/// token on every request: a token that found a session is hashed once, a token that found nothing every time (no
/// room taken by guesses), and the remembered hash is never worth more than the session it leads to.
@Suite struct CachedTokenHashTests {
    /// `TokenHash.hex`, counting its calls.
    final class CountingHash: Sendable {
        let calls = NIOLockedValueBox(0)
        func hash(_ token: String) -> String {
            calls.withLockedValue { $0 += 1 }
            return TokenHash.hex(token)
        }
    }

    @Test func aTokenThatFoundItsSessionIsHashedOnce() async throws {
        let cache = StateCache(trusted: true)
        let counter = CountingHash()
        let session = SessionLifecycleTests.session(cookie: "c1")
        #expect(session.id == TokenHash.hex("c1"))
        // Not kept yet: nothing found, nothing remembered.
        #expect(cache.session(token: "c1", hash: counter.hash) == nil)
        #expect(cache.session(token: "c1", hash: counter.hash) == nil)
        #expect(counter.calls.withLockedValue { $0 } == 2)

        cache.keep(session, since: cache.snapshot())
        for _ in 0..<5 { #expect(cache.session(token: "c1", hash: counter.hash)?.id == session.id) }
        #expect(counter.calls.withLockedValue { $0 } == 3)

        // Guesses are hashed each time and never remembered.
        for guess in 0..<3 { #expect(cache.session(token: "guess-\(guess)", hash: counter.hash) == nil) }
        #expect(cache.session(token: "guess-0", hash: counter.hash) == nil)
        #expect(counter.calls.withLockedValue { $0 } == 7)
    }

    @Test func aRememberedTokenLeadsNowhereOnceItsSessionIsGone() async throws {
        let cache = StateCache(trusted: true)
        let session = SessionLifecycleTests.session(cookie: "c2")
        cache.keep(session, since: cache.snapshot())
        #expect(cache.session(token: "c2", hash: TokenHash.hex) != nil)
        cache.invalidate(sessionID: session.id)
        #expect(cache.session(token: "c2", hash: TokenHash.hex) == nil)

        // Emptied (a replica that may have missed invalidations) and untrusted: nothing found, nothing remembered.
        cache.keep(session, since: cache.snapshot())
        cache.reset(trusted: false)
        let counter = CountingHash()
        #expect(cache.session(token: "c2", hash: counter.hash) == nil)
        cache.reset(trusted: true)
        cache.keep(session, since: cache.snapshot())
        #expect(cache.session(token: "c2", hash: counter.hash) != nil)
        #expect(cache.session(token: "c2", hash: counter.hash) != nil)
        #expect(counter.calls.withLockedValue { $0 } == 2)
    }

    @Test func aGrantIsHashedOnceAndOnlyForItsOwnApp() async throws {
        let cache = StateCache(trusted: true)
        let counter = CountingHash()
        cache.keep(grant: TokenHash.hex("g1"), slug: "wiki", sessionID: "s1")
        #expect(cache.grantedSession(token: "g1", slug: "wiki", hash: counter.hash) == "s1")
        #expect(cache.grantedSession(token: "g1", slug: "wiki", hash: counter.hash) == "s1")
        #expect(cache.grantedSession(token: "g1", slug: "other", hash: counter.hash) == nil)
        #expect(cache.grantedSession(token: "g2", slug: "wiki", hash: counter.hash) == nil)
        #expect(counter.calls.withLockedValue { $0 } == 2)
    }
}
