import Foundation
import GatehouseCore
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import Testing

@testable import Gatehouse
@testable import GatehouseStorage

/// Product events leave the request path through a bounded queue: stored in batches, dropped (and counted) only
/// when the queue is full, and stored before the gateway stops.
@Suite struct EventQueueTests {
    static let logger = Logger(label: "test-events")

    @Test(arguments: StoreBackend.allCases) func eventsAreStoredInBatchesAndAFullQueueDropsAndCounts(backend: StoreBackend) async throws {
        try await backend.withStores { stores in
            let queue = EventQueue(store: stores.events, capacity: 1_000, batchSize: 300, logger: Self.logger)
            // The writer is not running yet: the queue fills up, and what does not fit is refused and counted.
            let accepted = (0..<1_200).map { queue.enqueue(GatewayEvent(name: .upgradeBannerShown, sub: "m\($0 % 7)")) }
            #expect(accepted.filter { $0 }.count == 1_000 && accepted.suffix(200).allSatisfy { !$0 })
            #expect(queue.statistics == EventQueue.Statistics(waiting: 1_000, written: 0, dropped: 200, failedWrites: 0))
            try await whileRunning(queue) {
                #expect(await queue.flush(within: .seconds(10)))
                #expect(queue.statistics == EventQueue.Statistics(waiting: 0, written: 1_000, dropped: 200, failedWrites: 0))
            }
            let counts = try await stores.events.counts(in: DateInterval(start: .distantPast, end: .distantFuture))
            #expect(counts[.upgradeBannerShown] == EventCount(events: 1_000, members: 7))
        }
    }

    /// A graceful shutdown right after the events were queued still stores every one of them.
    @Test func aGracefulShutdownStoresWhatIsWaiting() async throws {
        try await StoreBackend.sqlite.withStores { stores in
            let queue = EventQueue(store: stores.events, batchSize: 50, logger: Self.logger)
            let group = ServiceGroup(services: [queue], gracefulShutdownSignals: [], logger: Self.logger)
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask { try await group.run() }
                for index in 0..<500 { queue.enqueue(GatewayEvent(name: .ssoLoginAttempt, detail: "\(index)")) }
                await group.triggerGracefulShutdown()
                try await tasks.waitForAll()
            }
            #expect(queue.statistics.written == 500 && queue.statistics.waiting == 0)
            #expect(try await stores.events.events(since: .distantPast).map(\.detail) == (0..<500).map { "\($0)" })
        }
    }

    /// An event that comes with every page a member reads is stored once per member and window, and counted in its
    /// metric every time.
    @Test func anEventRecordedOnceInAWindowIsStoredOncePerMemberAndCountedEveryTime() async throws {
        try await StoreBackend.sqlite.withStores { stores in
            let queue = EventQueue(store: stores.events, logger: Self.logger)
            let metrics = GatewayMetrics()
            let recorder = EventRecorder(queue: queue, logger: Self.logger, metrics: metrics)
            for sub in ["alice", "bob", "alice", "alice", "bob"] { recorder.recordOnceIn(.minutes(10), .upgradeBannerShown, sub: sub) }
            // A window that has passed records again.
            recorder.recordOnceIn(.zero, .upgradeBannerShown, sub: "alice")
            try await whileRunning(queue) { #expect(await queue.flush(within: .seconds(10))) }
            let counts = try await stores.events.counts(in: DateInterval(start: .distantPast, end: .distantFuture))
            #expect(counts[.upgradeBannerShown] == EventCount(events: 3, members: 2))
            #expect(MetricsTests.samples(metrics.exposition())["gatehouse_banner_shown_total"] == 6)
        }
    }

    /// Each thread looks at its own copy of when an event was last recorded before the shared table; the copy never
    /// holds the event back longer than the table would: a thread that saw the recording later still records again
    /// once the window since the recording itself has passed.
    @Test func aThreadsCopyHoldsAnEventBackNoLongerThanItsWindow() async throws {
        try await StoreBackend.sqlite.withStores { stores in
            let queue = EventQueue(store: stores.events, logger: Self.logger)
            let recorder = EventRecorder(queue: queue, logger: Self.logger, metrics: GatewayMetrics())
            let window = TimeAmount.seconds(1)
            let loop = MultiThreadedEventLoopGroup(numberOfThreads: 1)
            let onTheLoop = { try await loop.next().submit { recorder.recordOnceIn(window, .upgradeBannerShown, sub: "alice") }.get() }
            recorder.recordOnceIn(window, .upgradeBannerShown, sub: "alice")  // recorded, on this thread
            try await Task.sleep(for: .milliseconds(400))
            try await onTheLoop()  // within the window: counted only, and the loop remembers the recording's time
            try await Task.sleep(for: .milliseconds(800))
            try await onTheLoop()  // past the window since the recording: recorded again
            try await loop.shutdownGracefully()
            try await whileRunning(queue) { #expect(await queue.flush(within: .seconds(10))) }
            let counts = try await stores.events.counts(in: DateInterval(start: .distantPast, end: .distantFuture))
            #expect(counts[.upgradeBannerShown] == EventCount(events: 2, members: 1))
        }
    }
}
