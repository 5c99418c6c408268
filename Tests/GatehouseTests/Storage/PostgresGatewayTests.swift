import Foundation
import Testing

@testable import Gatehouse
@testable import GatehouseStorage

/// The whole gateway on PostgreSQL (`storage.kind = postgres`): migrations at start, then a member's sign-in, jar and
/// sign-out all through the PostgreSQL stores.
@Suite struct PostgresGatewayTests {
    @Test func aMemberSignsInUsesTheJarAndSignsOutOnPostgreSQL() async throws {
        let url = try await TestPostgres.freshDatabase()
        try await ProxyTests.withProxy(configure: { $0.storage = StorageConfiguration.postgres(url) }) { gateway, _ in
            #expect(try await gateway.get("/readyz", cookies: [:]).status == 200)
            let cookies = try await ProxyTests.signedIn(gateway)
            _ = try await gateway.get("/apps/echo/set-cookie?c=app%3D1%3B%20Path%3D%2F", cookies: cookies)
            let echoed = try await gateway.get("/apps/echo/echo/x", cookies: cookies)
            #expect(try ProxyTests.report(echoed).headers["cookie"] == ["app=1"])

            let portal = try await gateway.get("/", cookies: cookies)
            let csrf = try #require(portal.body.firstMatch(of: /name="csrf" value="([^"]+)"/)?.1)
            _ = try await gateway.post("/signout", form: [("csrf", String(csrf))], cookies: cookies)
            #expect(try await gateway.get("/", cookies: cookies).location == "/signin")
        }
    }

    /// A gateway whose PostgreSQL does not answer does not start (the migrations come before the listener), and
    /// says why, within a query's deadline rather than the migrations' long one.
    @Test func aGatewayWhosePostgreSQLDoesNotAnswerDoesNotStart() async throws {
        let error = await #expect(throws: StorageError.self) {
            try await LiveGateway.run(configure: { $0.storage = .postgres("postgres://gatehouse:x@127.0.0.1:1/gatehouse?sslmode=disable") }) { _ in }
        }
        #expect(error?.isUnavailable == true)
    }
}

/// After PostgreSQL was unreachable, queries fail at once for a second, then one at a time probes it.
@Suite struct PostgresAvailabilityTests {
    @Test func aFailureQuietensThenOneProbeAtATime() {
        var availability = PostgresDatabase.Availability()
        let start = ContinuousClock.now
        var admitted: [Bool] = []
        func admit(after offset: Duration) { admitted.append(availability.admit(now: start + offset)) }

        admit(after: .zero)
        admit(after: .zero)
        availability.failed(unavailable: false, now: start)  // a query error: the server answered
        admit(after: .zero)
        availability.failed(unavailable: true, now: start)
        admit(after: .milliseconds(999))  // quiet: refused at once
        admit(after: .seconds(1))  // the probe
        admit(after: .seconds(2))  // nobody else while it runs
        availability.failed(unavailable: true, now: start + .seconds(3))
        admit(after: .milliseconds(3_500))
        admit(after: .seconds(4))  // the next probe
        availability.answered()
        admit(after: .seconds(4))
        admit(after: .seconds(4))
        #expect(admitted == [true, true, true, false, true, false, false, true, true, true])
    }
}
