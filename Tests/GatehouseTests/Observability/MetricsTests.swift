import Foundation
import GatehouseCore
import Testing

@testable import Gatehouse

/// The operators' metrics: what a member's requests move, read from the metrics listener over a real socket.
@Suite(.serialized) struct MetricsTests {
    @Test(arguments: [
        ("/", RouteClass.portal), ("/chats", .portal), ("/stories/x", .portal), ("/signin", .signIn), ("/signin/start", .signIn),
        ("/auth/callback", .signIn), ("/signout", .signIn), ("/signed-out", .signIn), ("/apps/wiki/x", .proxy), ("/apps-open/wiki", .proxy),
        ("/upgrade", .upgrade), ("/upgrade/code", .upgrade), ("/static/app.css", .static), ("/operator/funnel", .operator),
        ("/healthz", .health), ("/readyz", .health), ("/dev-idp/auth", .development), ("/dev/inbox", .development),
        ("/appsx", .other), ("/upgraded", .other), ("/nope", .other), ("/staticx", .other),
    ])
    func routeClasses(path: String, expected: RouteClass) {
        #expect(RouteClass.of(path: path) == expected)
    }

    /// `name{labels} value` lines of the text exposition, keyed by `name{labels}`.
    static func samples(_ text: String) -> [String: Double] {
        var samples: [String: Double] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
            samples[String(line[..<space])] = value
        }
        return samples
    }

    @Test func anUpstreamThatDiesAfterTheHeadLeavesTheAnswerIncompleteAndCountsAsAReset() async throws {
        let metricsPort = try await LiveGateway.freePort()
        try await ProxyTests.withProxy(configure: { $0.metrics = MetricsConfiguration(port: metricsPort) }) { gateway, _ in
            let cookies = try await ProxyTests.signedIn(gateway)
            // A download with a length and a page streamed through the rewriter: neither may look complete.
            for path in ["/apps/echo/reset", "/apps/echo/reset-html"] {
                let outcome = try? await gateway.get(path, cookies: cookies)
                #expect(outcome == nil, "\(path) looked complete: \(outcome?.status ?? 0)")
            }
            #expect(try await gateway.get("/apps/echo/echo/after", cookies: cookies).status == 200)
            let samples = Self.samples(try await gateway.get("http://127.0.0.1:\(metricsPort)/metrics", cookies: [:]).body)
            #expect(samples[#"gatehouse_upstream_failures_total{app="echo",kind="reset"}"#] == 2)

            // Members who hang up in the middle of a page (as a load test does when it stops) are no app's failure.
            let cookie = cookies.map { "\($0)=\($1)" }.joined(separator: "; ")
            for _ in 0..<5 {
                let socket = try RawSocket(port: gateway.port)
                socket.send("GET /apps/echo/big?mb=20 HTTP/1.1\r\nHost: 127.0.0.1:\(gateway.port)\r\nCookie: \(cookie)\r\n\r\n")
                _ = await socket.readUntilClosed(timeout: .milliseconds(200))
                socket.close()
            }
            try await Task.sleep(for: .milliseconds(500))
            let after = Self.samples(try await gateway.get("http://127.0.0.1:\(metricsPort)/metrics", cookies: [:]).body)
            #expect(after[#"gatehouse_upstream_failures_total{app="echo",kind="reset"}"#] == 2)
        }
    }

    @Test func theListenerCountsWhatMembersDidWithBoundedLabels() async throws {
        let metricsPort = try await LiveGateway.freePort()
        try await ProxyTests.withProxy(configure: { $0.metrics = MetricsConfiguration(port: metricsPort) }) { gateway, _ in
            let cookies = try await ProxyTests.signedIn(gateway)
            #expect(try await gateway.get("/apps/echo/echo/x", cookies: cookies).status == 200)
            #expect(try await gateway.get("/apps/echo/echo/y", cookies: cookies).status == 200)
            let blocked = try await gateway.get("/apps/echo/redirect?to=" + FormEncoding.escape("https://evil.example/"), cookies: cookies)
            #expect(blocked.status == 403)
            #expect(try await gateway.get("/apps/down/", cookies: cookies).status == 502)
            let invented = "no-such-app-" + RandomToken.make(bytes: 6)
            #expect(try await gateway.get("/apps/\(invented)/x", cookies: cookies).status == 404)
            #expect(try await gateway.get("/\(invented)", cookies: cookies).status == 404)

            // The members' listener has no metrics; the operators' one has them all.
            #expect(try await gateway.get("/metrics", cookies: [:]).status == 404)
            // What the requests left for the store is written first: no query of theirs is running at the scrape.
            await gateway.built.events.flush()
            await gateway.built.running.foundation.audit.queue.flush()
            let scrape = try await gateway.get("http://127.0.0.1:\(metricsPort)/metrics", cookies: [:])
            #expect(scrape.status == 200)
            #expect(scrape.headers.first(name: "Content-Type")?.hasPrefix("text/plain; version=0.0.4") == true)
            let samples = Self.samples(scrape.body)
            #expect(samples["gatehouse_sign_in_attempts_total"] == 1)
            #expect(samples["gatehouse_sign_in_successes_total"] == 1)
            #expect(samples[#"gatehouse_http_requests_total{route="proxy",status="2xx",app="echo"}"#] == 2)
            #expect(samples[#"gatehouse_http_requests_total{route="proxy",status="4xx",app="echo"}"#] == 1)
            #expect(samples[#"gatehouse_http_requests_total{route="proxy",status="5xx",app="down"}"#] == 1)
            #expect(samples[#"gatehouse_http_requests_total{route="proxy",status="4xx",app=""}"#] == 1)
            #expect(samples[#"gatehouse_http_requests_total{route="other",status="4xx",app=""}"#] == 2)  // and /metrics
            #expect(samples[#"gatehouse_http_request_duration_seconds_count{route="proxy",app="echo"}"#] == 3)
            #expect(samples[#"gatehouse_upstream_failures_total{app="echo",kind="blocked"}"#] == 1)
            #expect(samples[#"gatehouse_upstream_failures_total{app="down",kind="connect"}"#] == 1)
            // Which build runs (the executable records its commit and day; a test's build has none).
            #expect(samples[#"gatehouse_build_info{version="\#(BuildInfo.version)",commit="unknown",built="unknown"}"#] == 1)
            let health = try await gateway.get(Paths.health, cookies: [:], headers: [("Accept", "application/json")])
            #expect(health.status == 200 && health.body.contains(#""version":"\#(BuildInfo.version)""#) && health.body.contains(#""status":"ok""#))
            #expect(try await gateway.get(Paths.health, cookies: [:]).body == "ok\n")
            #expect(samples["gatehouse_active_sessions"] != nil)  // read from the store at start, then every 30 s
            #expect(samples["gatehouse_db_queries_total"] ?? 0 > 0 && samples["gatehouse_db_pool_connections_max"] == 1)  // SQLite: one
            #expect(samples["gatehouse_db_queries_running"] == 0)
            #expect(samples[#"gatehouse_db_query_errors_total{kind="unavailable"}"#] == 0)
            #expect((samples["gatehouse_session_cache_hits_total"] ?? 0) + (samples["gatehouse_session_cache_misses_total"] ?? 0) > 0)
            // Labels never carry what a member typed, nor who they are.
            #expect(!scrape.body.contains(invented))
            #expect(!scrape.body.contains(DevelopmentAccounts.all[0].sub))
        }
    }

    /// A callback the operator moved out of `/auth` is counted as sign-in all the same.
    @Test func aMovedCallbackIsASignInRoute() async throws {
        try await LiveGateway.run(configure: { $0.oidc.redirectPath = "/login/return" }) { gateway in
            let flow = try await SignInFlowTests.signIn(gateway)
            #expect(flow.callbackURL?.contains("/login/return?") == true && flow.callbackReply?.status == 303)
            let samples = Self.samples(gateway.built.metrics.exposition())
            #expect(samples[#"gatehouse_http_requests_total{route="sign_in",status="3xx",app=""}"#] == 2)  // the start and the callback
            #expect(samples[#"gatehouse_http_requests_total{route="other",status="3xx",app=""}"#] == nil)
        }
    }

    @Test func theMetricsListenerMustNotShareTheMembersPort() throws {
        let loader = ConfigurationLoader(environment: ["GATEHOUSE_METRICS_PORT": "8080"], developmentDefaults: .standard)
        #expect {
            try loader.load(path: nil, development: true)
        } throws: { error in
            "\(error)".contains("metrics.port")
        }
    }
}
