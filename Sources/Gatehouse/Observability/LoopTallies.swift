import CoreMetrics
import NIOConcurrencyHelpers
import NIOPosix

/// What the requests of each event loop add to the metrics, kept on the loop and added to the registry in batches.
///
/// The registry's handles are shared by every thread, and so are the locks around them (the handles' dictionaries,
/// each histogram's buckets): two event loops counting every page would contend on them, and a contended lock is a
/// `futex` that wakes the other loop. A loop's tally has a lock of its own, which only a scrape (`GatewayMetrics.
/// exposition`, which adds every tally first) takes besides the loop; the loop adds its tally itself every
/// `batch` requests. Off the event loops (the application's tasks) figures go to the registry at once.
final class LoopTallies: Sendable {
    /// One event loop's figures since they were last added.
    final class Tally: Sendable {
        struct Figures {
            var requests: [(key: GatewayMetrics.RequestKey, nanoseconds: Int64)] = []
            var counts: [GatewayMetrics.CounterKey: Int] = [:]
        }

        private let figures = NIOLockedValueBox(Figures())

        /// Keeps a request; the figures to add when the batch is full.
        func add(_ key: GatewayMetrics.RequestKey, nanoseconds: Int64) -> Figures? {
            figures.withLockedValue { figures in
                figures.requests.append((key, nanoseconds))
                guard figures.requests.count >= LoopTallies.batch else { return nil }
                defer { figures = Figures() }
                return figures
            }
        }

        func count(_ key: GatewayMetrics.CounterKey) {
            figures.withLockedValue { $0.counts[key, default: 0] += 1 }
        }

        /// What was kept, emptied.
        func take() -> Figures {
            figures.withLockedValue { figures in
                defer { figures = Figures() }
                return figures
            }
        }
    }

    static let batch = 256
    private let mine = ThreadSpecificVariable<Tally>()
    /// Every loop's tally, for a scrape.
    private let all = NIOLockedValueBox<[Tally]>([])

    /// The tally of the event loop this runs on; `nil` off the event loops.
    var current: Tally? {
        if let tally = mine.currentValue { return tally }
        guard MultiThreadedEventLoopGroup.currentEventLoop != nil else { return nil }
        let tally = Tally()
        mine.currentValue = tally
        all.withLockedValue { $0.append(tally) }
        return tally
    }

    /// What every loop kept, emptied.
    func takeAll() -> [Tally.Figures] {
        all.withLockedValue { $0 }.map { $0.take() }
    }
}

extension GatewayMetrics {
    /// Adds what the event loops kept to the registry: at each scrape, so that it shows every request answered.
    func addTallies() {
        for figures in tallies.takeAll() { add(figures) }
    }

    func add(_ figures: LoopTallies.Tally.Figures) {
        for (key, nanoseconds) in figures.requests { record(key, nanoseconds: nanoseconds) }
        for (key, count) in figures.counts { counter(key).increment(by: count) }
    }
}
