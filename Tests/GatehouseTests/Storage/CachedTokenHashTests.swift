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

    /// The session and its (empty) jar, as the data plane finds a member only with both.
    static func keep(_ session: Session, in cache: StateCache) {
        cache.keep(session, since: cache.snapshot())
        cache.keep(jar: nil, sessionID: session.id, since: cache.snapshot())
    }

    /// The session the data plane finds by a session cookie's token.
    func sessionFound(in cache: StateCache, token: String, hash: (String) -> String) -> Session? {
        cache.member(token: token, hash: hash, pendingJarLimit: 10)?.session
    }

    @Test func aTokenThatFoundItsSessionIsHashedOnce() async throws {
        let cache = StateCache(trusted: true)
        let counter = CountingHash()
        let session = SessionLifecycleTests.session(cookie: "c1")
        #expect(session.id == TokenHash.hex("c1"))
        // Not kept yet: nothing found, nothing remembered.
        #expect(sessionFound(in: cache, token: "c1", hash: counter.hash) == nil)
        #expect(sessionFound(in: cache, token: "c1", hash: counter.hash) == nil)
        #expect(counter.calls.withLockedValue { $0 } == 2)

        Self.keep(session, in: cache)
        for _ in 0..<5 { #expect(sessionFound(in: cache, token: "c1", hash: counter.hash)?.id == session.id) }
        #expect(counter.calls.withLockedValue { $0 } == 3)

        // Guesses are hashed each time and never remembered.
        for guess in 0..<3 { #expect(sessionFound(in: cache, token: "guess-\(guess)", hash: counter.hash) == nil) }
        #expect(sessionFound(in: cache, token: "guess-0", hash: counter.hash) == nil)
        #expect(counter.calls.withLockedValue { $0 } == 7)
    }

    @Test func aRememberedTokenLeadsNowhereOnceItsSessionIsGone() async throws {
        let cache = StateCache(trusted: true)
        let session = SessionLifecycleTests.session(cookie: "c2")
        Self.keep(session, in: cache)
        #expect(sessionFound(in: cache, token: "c2", hash: TokenHash.hex) != nil)
        cache.invalidate(sessionID: session.id)
        #expect(sessionFound(in: cache, token: "c2", hash: TokenHash.hex) == nil)

        // Emptied (a replica that may have missed invalidations) and untrusted: nothing found, nothing remembered.
        Self.keep(session, in: cache)
        cache.reset(trusted: false)
        let counter = CountingHash()
        #expect(sessionFound(in: cache, token: "c2", hash: counter.hash) == nil)
        cache.reset(trusted: true)
        Self.keep(session, in: cache)
        #expect(sessionFound(in: cache, token: "c2", hash: counter.hash) != nil)
        #expect(sessionFound(in: cache, token: "c2", hash: counter.hash) != nil)
        #expect(counter.calls.withLockedValue { $0 } == 2)
    }

    @Test func aGrantIsHashedOnceAndOnlyForItsOwnApp() async throws {
        let cache = StateCache(trusted: true)
        let counter = CountingHash()
        let session = SessionLifecycleTests.session(cookie: "s1")
        Self.keep(session, in: cache)
        cache.keep(grant: TokenHash.hex("g1"), slug: "wiki", sessionID: session.id)
        func granted(_ grant: String, slug: String) -> String? {
            cache.member(grant: grant, slug: slug, hash: counter.hash, pendingJarLimit: 10)?.session.id
        }
        #expect(granted("g1", slug: "wiki") == session.id)
        #expect(granted("g1", slug: "wiki") == session.id)
        #expect(granted("g1", slug: "other") == nil)
        #expect(granted("g2", slug: "wiki") == nil)
        #expect(counter.calls.withLockedValue { $0 } == 2)
    }
}
