import Foundation
import GatehouseCore
import NIOConcurrencyHelpers
import Testing

@testable import Gatehouse
@testable import GatehouseStorage

/// What each thread keeps of shared state so that the event loops do not take one lock on every page
/// (`ThreadMemo`, `ReadMostly`, the state cache's copies of members): a thread's copy is its own, and no copy
/// outlives a change of what it copies, whichever thread made the change — a session signed out on one thread is
/// refused at once on every other.
@Suite struct ThreadCopiesTests {
    /// Runs `body` on a thread of its own and waits for it.
    static func onAnotherThread<T: Sendable>(_ body: @escaping @Sendable () -> T) -> T {
        let result = NIOLockedValueBox<T?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread {
            result.withLockedValue { $0 = body() }
            done.signal()
        }.start()
        done.wait()
        return result.withLockedValue { $0! }
    }

    @Test func aMemoIsEachThreadsOwnAndStartsOverPastItsLimit() {
        let memo = ThreadMemo<String, Int>(limit: 2)
        memo.remember(1, for: "a")
        #expect(memo["a"] == 1)
        #expect(Self.onAnotherThread { memo["a"] } == nil)
        #expect(Self.onAnotherThread { memo.remember(2, for: "a"); return memo["a"] } == 2)
        #expect(memo["a"] == 1)

        memo.remember(2, for: "b")
        memo.remember(3, for: "c")  // past the limit: starts over with this one
        #expect(memo["a"] == nil && memo["b"] == nil && memo["c"] == 3)
        memo.forget("c")
        #expect(memo["c"] == nil)
        // Two memos never share entries.
        let other = ThreadMemo<String, Int>(limit: 2)
        #expect(other["c"] == nil)
    }

    @Test func aChangeOfAReadMostlyValueIsReadByEveryThreadFromTheNextRead() {
        let value = ReadMostly(1)
        #expect(value.value == 1)
        #expect(Self.onAnotherThread { value.value } == 1)
        Self.onAnotherThread { value.change { $0 = 2 } }
        #expect(value.value == 2)
        value.change { $0 += 1 }
        #expect(Self.onAnotherThread { value.value } == 3)
        #expect(value.value == 3)
    }

    @Test func aMembersCopyIsNotUsedOnceTheCacheChanged() throws {
        let cache = StateCache(trusted: true)
        let session = SessionLifecycleTests.session(cookie: "m1")
        cache.keep(session, since: cache.snapshot())
        cache.keep(jar: nil, sessionID: session.id, since: cache.snapshot())
        let member = { cache.member(token: "m1", hash: TokenHash.hex, pendingJarLimit: 10) }
        #expect(member()?.session.id == session.id)
        #expect(member()?.jar == nil)
        let hitsBefore = cache.statistics.hits
        #expect(member() != nil)
        #expect(cache.statistics.hits == hitsBefore + 1)  // the thread's copy counts as a hit

        // A jar change made on another thread is in this thread's next read.
        let origin = try #require(CookieOrigin(url: URL(string: "http://app.internal/")!))
        Self.onAnotherThread {
            cache.changeJar(session.id) { $0.store(setCookie: "sid=2", from: origin) }
        }
        var jar = try #require(member()?.jar)
        #expect(jar.cookieHeader(for: origin) == "sid=2")

        // Too many changes waiting for the store: the data plane leaves the request to the application.
        #expect(cache.member(token: "m1", hash: TokenHash.hex, pendingJarLimit: 1) == nil)
        cache.jarWritten(session.id, count: 1)
        #expect(cache.member(token: "m1", hash: TokenHash.hex, pendingJarLimit: 1) != nil)

        // Signed out on another thread: refused here at once.
        Self.onAnotherThread { cache.invalidate(sessionID: session.id) }
        #expect(member() == nil)
        // An untrusted cache serves no copy either.
        cache.keep(session, since: cache.snapshot())
        cache.keep(jar: nil, sessionID: session.id, since: cache.snapshot())
        #expect(member() != nil)
        Self.onAnotherThread { cache.reset(trusted: false) }
        #expect(member() == nil)
    }

    @Test func aMembersCopyLastsNoLongerThanItsEntries() {
        let cache = StateCache(maximumAge: .seconds(60), trusted: true)
        let session = SessionLifecycleTests.session(cookie: "m2")
        let start = ContinuousClock.now
        cache.keep(session, since: cache.snapshot(), now: start)
        cache.keep(jar: CookieJar?.none, sessionID: session.id, since: cache.snapshot(), now: start)
        #expect(cache.member(token: "m2", hash: TokenHash.hex, pendingJarLimit: 10, now: start + .seconds(1)) != nil)
        #expect(cache.member(token: "m2", hash: TokenHash.hex, pendingJarLimit: 10, now: start + .seconds(61)) == nil)
    }

    @Test func aGrantsMemberIsFoundAndForgottenLikeATokens() {
        let cache = StateCache(trusted: true)
        let session = SessionLifecycleTests.session(cookie: "m3")
        cache.keep(session, since: cache.snapshot())
        cache.keep(jar: nil, sessionID: session.id, since: cache.snapshot())
        cache.keep(grant: TokenHash.hex("g3"), slug: "wiki", sessionID: session.id)
        let member = { cache.member(grant: "g3", slug: "wiki", hash: TokenHash.hex, pendingJarLimit: 10) }
        #expect(member()?.session.id == session.id)
        #expect(cache.member(grant: "g3", slug: "other", hash: TokenHash.hex, pendingJarLimit: 10) == nil)
        #expect(member() != nil)
        Self.onAnotherThread { cache.invalidate(sessionID: session.id) }
        #expect(member() == nil)
    }
}
