import NIOCore
import NIOPosix
import Testing

@testable import Gatehouse

/// The event loops count their requests in tallies of their own (no lock they would contend on for every page),
/// added to the registry every `LoopTallies.batch` requests and at each scrape: a scrape shows every request
/// answered, whichever thread counted it.
@Suite struct LoopTalliesTests {
    @Test func whatALoopCountedIsInTheRegistryInBatchesAndAtEachScrape() async throws {
        let metrics = GatewayMetrics()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let requests = LoopTallies.batch + 44
        try await group.next().submit {
            for _ in 0..<requests {
                metrics.request(route: .proxy, status: 200, app: "wiki", duration: .milliseconds(3))
                metrics.dataPlaneRequest(app: "wiki")
            }
        }.get()
        try await group.shutdownGracefully()
        let count = #"gatehouse_http_requests_total{route="proxy",status="2xx",app="wiki"}"#
        // One batch went in by itself; the rest waited on the loop.
        #expect(MetricsTests.samples(metrics.registry.emitToString())[count] == Double(LoopTallies.batch))
        let scraped = MetricsTests.samples(metrics.exposition())
        #expect(scraped[count] == Double(requests))
        #expect(scraped[#"gatehouse_data_plane_requests_total{app="wiki"}"#] == Double(requests))
        #expect(scraped[#"gatehouse_http_request_duration_seconds_count{route="proxy",app="wiki"}"#] == Double(requests))

        // Off the event loops (the application's tasks), at once.
        metrics.request(route: .proxy, status: 502, app: "wiki", duration: .milliseconds(1))
        #expect(
            MetricsTests.samples(metrics.registry.emitToString())[#"gatehouse_http_requests_total{route="proxy",status="5xx",app="wiki"}"#] == 1)
    }
}
