import Foundation
import GatehouseCore
import Logging
import Testing

@testable import Gatehouse
@testable import GatehouseStorage

/// SQLite's file stops taking writes (read-only, or its disk full).
/// Members get the "temporarily unavailable" page (503, not a generic 500), `/readyz` says so, the errors count as
/// `kind="unavailable"`, and the gateway recovers without a restart once the file answers again.
@Suite(.serialized) struct SQLiteFaultTests {
    static func samples(_ gateway: LiveGateway) -> [String: Double] {
        MetricsTests.samples(gateway.built.metrics.exposition())
    }

    @Test func aFileThatStopsTakingWritesIsUnavailableAndRecoversWithoutARestart() async throws {
        try await UpgradeFlowTests.live { gateway in
            let alice = try await SignInFlowTests.signIn(gateway, as: "alice", deepLink: "/").cookies.values
            #expect(try await gateway.get(Paths.ready, cookies: [:]).status == 200)
            // The gateway's own connection refuses every write from now on, as it does once the file is read-only
            // (SQLite's `SQLITE_READONLY`; made here from inside, since permissions do not stop root).
            let database = try #require(gateway.built.stores.sqlite)
            try await database.query("PRAGMA query_only = ON")

            let signIn = try await gateway.get("/signin/start", cookies: [:], headers: [("Accept", "text/html")])
            #expect(signIn.status == 503 && signIn.body.contains("Temporarily unavailable") && signIn.body.contains("Request ID"))
            #expect(signIn.headers.first(name: "Retry-After") == "5")
            let ready = try await gateway.get(Paths.ready, cookies: [:])
            #expect(ready.status == 503 && ready.body.contains("storage unavailable"))
            let samples = Self.samples(gateway)
            #expect(samples[#"gatehouse_db_query_errors_total{kind="unavailable"}"#] ?? 0 >= 2)
            #expect(samples[#"gatehouse_db_query_errors_total{kind="query"}"#] == 0)

            // The file is opened again two seconds after it failed, and every two seconds until it takes writes:
            // ready within seconds, and the signed-in member goes on; nobody had to restart anything.
            var recovered = false
            for _ in 0..<30 where !recovered {
                try await Task.sleep(for: .milliseconds(200))
                recovered = try await gateway.get(Paths.ready, cookies: [:]).status == 200
            }
            #expect(recovered)
            #expect(try await gateway.get("/", cookies: alice).status == 200)
            #expect(try await SignInFlowTests.signIn(gateway, as: "bob", deepLink: "/").cookies.values.isEmpty == false)
        }
    }

    @Test func aFullFileIsUnavailableNotAQueryFailure() async throws {
        let path = UpgradeFlowTests.temporaryDatabase()
        let database = try await SQLiteDatabase.open(path: path, logger: Logger(label: "sqlite-full"))
        let events = SQLiteEventStore(database: database)
        // The file may not grow past its pages now: the next page it needs is refused as a full disk's is.
        let pages = try #require(try await database.query("PRAGMA page_count").first?.column("page_count")?.integer)
        try await database.query("PRAGMA max_page_count = \(pages)")
        var failure: (any Error)?
        for index in 0..<10_000 where failure == nil {
            do {
                try await events.append([GatewayEvent(name: .ssoLoginSuccess, sub: "member-\(index)", detail: String(repeating: "x", count: 512))])
            } catch { failure = error }
        }
        let error = try #require(failure as? StorageError)
        #expect(error.isUnavailable, "\(error)")
        #expect(database.statistics.current.unavailable >= 1 && database.statistics.current.failed == 0)
        try await database.close()
    }
}
