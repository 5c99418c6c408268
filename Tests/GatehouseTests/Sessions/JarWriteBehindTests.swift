import Foundation
import GatehouseCore
import Logging
import NIOConcurrencyHelpers
import Testing

@testable import Gatehouse
@testable import GatehouseStorage

/// The jar changes the data plane keeps in the state cache reach the store: while the store is unavailable they wait
/// (nothing lost to a database outage) and are written once it answers; a change the store refuses is dropped.
@Suite struct JarWriteBehindTests {
    /// A store in memory that is down, refusing, or up as the test says.
    final class FlakyJars: CookieJarStore, Sendable {
        enum Mode { case up, unavailable, refusing }
        let mode = NIOLockedValueBox(Mode.up)
        let jars = NIOLockedValueBox([String: CookieJar]())

        func load(sessionID: String) async throws -> CookieJar? { jars.withLockedValue { $0[sessionID] } }
        func modify(sessionID: String, _ change: @Sendable @escaping (inout CookieJar) -> Void) async throws -> CookieJar {
            switch mode.withLockedValue({ $0 }) {
            case .unavailable: throw StorageError.unavailable("down for the test")
            case .refusing: throw StorageError.query("foreign key: the session is gone")
            case .up: break
            }
            return jars.withLockedValue { jars in
                var jar = jars[sessionID] ?? CookieJar()
                change(&jar)
                jars[sessionID] = jar
                return jar
            }
        }
        func delete(sessionID: String) async throws { jars.withLockedValue { $0[sessionID] = nil } }
    }

    static let origin = CookieOrigin(host: "127.0.0.1", path: "/", isSecure: false)

    @Test func changesWaitForAnUnavailableStoreAndAreDroppedWhenRefused() async throws {
        let store = FlakyJars()
        let jars = SharedCookieJars(store: store)
        let cache = StateCache(trusted: true)
        let writer = JarWriteBehind(jars: jars, cache: cache, metrics: GatewayMetrics(), logger: Logger(label: "jar-write-behind"))

        store.mode.withLockedValue { $0 = .unavailable }
        cache.changeJar("s1", jars.absorbing(setCookies: ["a=1; Path=/"], from: Self.origin))
        await writer.flush()
        await writer.flush()
        #expect(cache.pendingJarChanges == 1)  // kept for when the store answers
        cache.changeJar("s1", jars.absorbing(setCookies: ["b=2; Path=/"], from: Self.origin))

        store.mode.withLockedValue { $0 = .up }
        await writer.flush()
        #expect(cache.pendingJarChanges == 0)
        var stored = try #require(try await store.load(sessionID: "s1"))
        #expect(stored.cookieHeader(for: Self.origin) == "a=1; b=2")

        store.mode.withLockedValue { $0 = .refusing }
        cache.changeJar("s2", jars.absorbing(setCookies: ["c=3; Path=/"], from: Self.origin))
        await writer.flush()
        #expect(cache.pendingJarChanges == 0 && store.jars.withLockedValue { $0["s2"] } == nil)
    }

    /// A cookie the application's path stores while the data plane's older change of the same cookie waits for the
    /// store keeps its place behind it: the newer value is the one stored and read, never overtaken by the older.
    @Test func anAnswerOfTheApplicationsPathIsNeverOvertakenByAnOlderWaitingChange() async throws {
        let store = FlakyJars()
        let cache = StateCache(trusted: true)
        let jars = SharedCookieJars(store: store, cache: cache)
        let writer = JarWriteBehind(jars: jars, cache: cache, metrics: GatewayMetrics(), logger: Logger(label: "jar-write-behind"))

        cache.changeJar("s1", jars.absorbing(setCookies: ["token=old; Path=/"], from: Self.origin))
        try await jars.absorb(setCookies: ["token=new; Path=/"], from: Self.origin, sessionID: "s1")
        await writer.flush()
        var stored = try #require(try await store.load(sessionID: "s1"))
        #expect(stored.cookieHeader(for: Self.origin) == "token=new")
        // With nothing waiting, the application's path writes through at once.
        try await jars.absorb(setCookies: ["other=1; Path=/"], from: Self.origin, sessionID: "s1")
        #expect(cache.pendingJarChanges == 0)
        stored = try #require(try await store.load(sessionID: "s1"))
        #expect(stored.cookieHeader(for: Self.origin) == "other=1; token=new" || stored.cookieHeader(for: Self.origin) == "token=new; other=1")
    }
}
