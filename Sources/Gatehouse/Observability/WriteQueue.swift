import Foundation
import GatehouseCore
import GatehouseStorage
import Logging
import NIOConcurrencyHelpers
import ServiceLifecycle

/// Product events on their way to the store (`EventRecorder`).
public typealias EventQueue = WriteQueue<GatewayEvent>

extension WriteQueue where Element == GatewayEvent {
    public convenience init(store: any EventStore, capacity: Int = 10_000, batchSize: Int = 500, logger: Logger) {
        self.init(what: "events", capacity: capacity, batchSize: batchSize, logger: logger) { try await store.append($0) }
    }
}

/// Records on their way to a store, off the request path (product events, the audit trail): a request adds its record
/// to a bounded queue in memory and goes on; one writer stores them in batches (one statement each). A failed write
/// keeps its batch and tries again with a growing pause. A full queue refuses the event: the request still succeeds, and the drop is
/// counted and logged (at most once a second, with the count), never silent. A graceful shutdown stores what is
/// waiting before the store closes (the queue runs after the store in the service list, so it stops first).
public final class WriteQueue<Element: Sendable>: Service, Sendable {
    public struct Statistics: Sendable, Equatable {
        public var waiting = 0
        public var written = 0
        public var dropped = 0
        public var failedWrites = 0
    }

    private struct State {
        var waiting: [Element] = []
        var statistics = Statistics()
        /// Events accepted so far, and events settled (written, or given up at shutdown): a flush waits for the
        /// second to reach what the first was when it began.
        var accepted = 0
        var settled = 0
        var dropsNotLogged = 0
        var lastDropLog: ContinuousClock.Instant?
    }

    /// What the records are, in the log's lines (`events`, `audit records`).
    let what: String
    let write: @Sendable ([Element]) async throws -> Void
    let capacity: Int
    let batchSize: Int
    let logger: Logger
    private let state = NIOLockedValueBox(State())
    private let doorbell: AsyncStream<Void>
    private let ring: AsyncStream<Void>.Continuation

    public init(
        what: String, capacity: Int = 10_000, batchSize: Int = 500, logger: Logger, write: @escaping @Sendable ([Element]) async throws -> Void
    ) {
        self.what = what
        self.write = write
        self.capacity = capacity
        self.batchSize = batchSize
        self.logger = logger
        (doorbell, ring) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Queues `event`; `false` when the queue is full and the event was dropped (counted and logged).
    @discardableResult
    public func enqueue(_ event: Element) -> Bool {
        let (wake, dropsToLog) = state.withLockedValue { state -> (Bool?, Int?) in
            guard state.waiting.count < capacity else {
                state.statistics.dropped += 1
                state.dropsNotLogged += 1
                let now = ContinuousClock.now
                guard state.lastDropLog.map({ now - $0 >= .seconds(1) }) ?? true else { return (nil, nil) }
                state.lastDropLog = now
                defer { state.dropsNotLogged = 0 }
                return (nil, state.dropsNotLogged)
            }
            state.waiting.append(event)
            state.accepted += 1
            // The writer drains until nothing waits: it needs waking only when it may have found the queue empty.
            return (state.waiting.count == 1, nil)
        }
        if let dropsToLog {
            logger.error(
                "\(what) queue full; \(what) dropped", metadata: ["dropped": "\(dropsToLog)", "capacity": "\(capacity)"])
        }
        if wake == true { ring.yield() }
        return wake != nil
    }

    public var statistics: Statistics {
        state.withLockedValue { state in
            var statistics = state.statistics
            statistics.waiting = state.waiting.count
            return statistics
        }
    }

    /// Waits until every event queued before the call is stored (or given up on), for at most `limit`; whether
    /// they were. For a reader that wants this replica's latest events in the store (the funnel report).
    @discardableResult
    public func flush(within limit: Duration = .seconds(2)) async -> Bool {
        let target = state.withLockedValue { $0.accepted }
        ring.yield()
        let deadline = ContinuousClock.now + limit
        while state.withLockedValue({ $0.settled }) < target {
            guard ContinuousClock.now < deadline, !Task.isCancelled else { return false }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return true
    }

    public func run() async throws {
        await withGracefulShutdownHandler {
            for await _ in doorbell {
                await writeWaiting(retrying: true)
            }
        } onGracefulShutdown: {
            self.ring.finish()
        }
        // Shutting down (or cancelled): one more pass, without waiting between failed tries.
        await writeWaiting(retrying: false)
    }

    /// Writes batches until nothing waits. A failure keeps the batch at the front and, when `retrying`, pauses and
    /// tries again; otherwise what is left is given up on (counted as dropped, and logged).
    private func writeWaiting(retrying: Bool) async {
        var pause = Duration.milliseconds(100)
        while let batch = nextBatch() {
            do {
                try await write(batch)
                settle(batch.count, written: true)
                pause = .milliseconds(100)
            } catch {
                state.withLockedValue { $0.statistics.failedWrites += 1 }
                logger.error("\(what) not stored", metadata: ["records": "\(batch.count)", "error": .string("\(error)")])
                guard retrying, !Task.isCancelled, !Task.isShuttingDownGracefully else {
                    let lost = state.withLockedValue { $0.waiting.count }
                    settle(lost, written: false)
                    logger.error("\(what) given up at shutdown", metadata: ["dropped": "\(lost)"])
                    return
                }
                try? await Task.sleep(for: pause)
                pause = min(pause * 2, .seconds(5))
            }
        }
    }

    private func nextBatch() -> [Element]? {
        state.withLockedValue { state in
            state.waiting.isEmpty ? nil : Array(state.waiting.prefix(batchSize))
        }
    }

    /// The first `count` waiting events are done with: stored, or given up on.
    private func settle(_ count: Int, written: Bool) {
        state.withLockedValue { state in
            state.waiting.removeFirst(min(count, state.waiting.count))
            state.settled += count
            if written { state.statistics.written += count } else { state.statistics.dropped += count }
        }
    }
}
