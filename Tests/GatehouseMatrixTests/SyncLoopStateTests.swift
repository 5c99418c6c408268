import Testing

@testable import GatehouseMatrix

/// When a member's `/sync` runs, as orderings of what happens: pages coming and going, answers and failures, the
/// grace after the last page, a token the homeserver refused.
@Suite struct SyncLoopStateTests {
    typealias Event = SyncLoopState.Event
    typealias Action = SyncLoopState.Action

    static func run(_ events: [Event]) -> [Action] {
        var state = SyncLoopState()
        return events.map { state.handle($0) }
    }

    @Test(arguments: [
        // A page opens: the loop starts; answers keep it going.
        ([.listenerJoined, .syncAnswered, .syncAnswered], [.start, .syncAgain, .syncAgain]),
        // A second page changes nothing; the last one leaving starts the grace; the grace ending stops the loop.
        ([.listenerJoined, .listenerJoined, .listenerLeft, .listenerLeft, .graceEnded], [.start, .none, .none, .startGrace, .stop]),
        // A page back within the grace: the loop goes on, and the grace's end is nothing then.
        ([.listenerJoined, .listenerLeft, .listenerJoined, .graceEnded, .syncAnswered], [.start, .startGrace, .none, .none, .syncAgain]),
        // After the stop, a new page starts it again (from the loop's `since`).
        ([.listenerJoined, .listenerLeft, .graceEnded, .listenerJoined], [.start, .startGrace, .stop, .start]),
        // Failures wait longer each time, up to 30 s; an answer starts the count again.
        (
            [.listenerJoined, .syncFailed(transient: true), .syncFailed(transient: true), .syncFailed(transient: true), .syncAnswered,
                .syncFailed(transient: true)],
            [.start, .retry(afterSeconds: 1), .retry(afterSeconds: 2), .retry(afterSeconds: 4), .syncAgain, .retry(afterSeconds: 1)]
        ),
        // A refused token ends it, for good: a page coming later is told at once.
        ([.listenerJoined, .syncFailed(transient: false), .syncAnswered, .listenerJoined], [.start, .end, .none, .end]),
        // An answer of a sync under way when the loop stopped changes nothing.
        ([.listenerJoined, .listenerLeft, .graceEnded, .syncAnswered, .syncFailed(transient: true)], [.start, .startGrace, .stop, .none, .none]),
        // More leaving than joining never goes below no listener.
        ([.listenerLeft, .listenerJoined], [.none, .start]),
    ] as [([Event], [Action])])
    func orderings(events: [Event], expected: [Action]) {
        #expect(Self.run(events) == expected)
    }

    @Test func retriesNeverWaitLongerThanThirtySeconds() {
        var state = SyncLoopState()
        _ = state.handle(.listenerJoined)
        let waits = (0..<10).map { _ in state.handle(.syncFailed(transient: true)) }
        #expect(waits.last == .retry(afterSeconds: 30))
    }
}
