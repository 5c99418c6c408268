import NIOHTTP1
import Testing

@testable import GatehouseDataPlane

/// A member connection's order alone: each table is a sequence of events and what the machine answers to each,
/// written as `event → answer`.
@Suite struct MemberConnectionStateMachineTests {
    enum Event: CustomStringConvertible {
        /// A request's head: `upgrade` when it asks for a WebSocket.
        case head(String, upgrade: Bool = false)
        case toApplication, toExchange, body, end
        case applicationEnded, exchangeEnded, exchangeEndedClosing
        case upgradeRefused, handOver
        case quiesce, memberGone
        case read(waiting: Bool = false, exchangeHolds: Bool = false)
        case resume(waiting: Bool = false, exchangeHolds: Bool = false)
        case served

        var description: String {
            switch self {
            case .head(let uri, let upgrade): "head \(uri)\(upgrade ? " upgrade" : "")"
            case .toApplication: "to application"
            case .toExchange: "to exchange"
            case .body: "body"
            case .end: "end"
            case .applicationEnded: "application ended"
            case .exchangeEnded: "exchange ended"
            case .exchangeEndedClosing: "exchange ended closing"
            case .upgradeRefused: "upgrade refused"
            case .handOver: "hand over"
            case .quiesce: "quiesce"
            case .memberGone: "member gone"
            case .read(let waiting, let holds): "read" + (waiting ? " waiting" : "") + (holds ? " held by exchange" : "")
            case .resume(let waiting, let holds): "resume" + (waiting ? " waiting" : "") + (holds ? " held by exchange" : "")
            case .served: "served"
            }
        }
    }

    static func apply(_ event: Event, to machine: inout MemberConnectionStateMachine) -> String {
        switch event {
        case .head(let uri, let upgrade):
            return "\(machine.head(RequestHead(HTTPRequestHead(version: .http1_1, method: .GET, uri: uri)), isUpgrade: upgrade))"
        case .toApplication:
            machine.toApplication()
            return "owed \(machine.applicationAnswersOwed)"
        case .toExchange: return machine.toExchange() ? "started" : "waits"
        case .body: return "\(machine.body())"
        case .end:
            switch machine.end() {
            case .decideUpgrade(let head): return "decide upgrade \(head.uri)"
            case let step: return "\(step)"
            }
        case .applicationEnded: return "\(machine.applicationAnswerEnded())"
        case .exchangeEnded: return "\(machine.exchangeEnded(closeMember: false))"
        case .exchangeEndedClosing: return "\(machine.exchangeEnded(closeMember: true))"
        case .upgradeRefused: return machine.upgradeToApplication().map { "to application, release quiesce \($0)" } ?? "member gone"
        case .handOver:
            machine.handOver()
            return "-"
        case .quiesce: return machine.quiesce() ? "held" : "passed on"
        case .memberGone:
            machine.memberGone()
            return "-"
        case .read(let waiting, let holds): return machine.read(partsWaiting: waiting, exchangeHoldsReads: holds) ? "reads" : "held"
        case .resume(let waiting, let holds): return machine.resumeReads(partsWaiting: waiting, exchangeHoldsReads: holds) ? "reads" : "-"
        case .served: return machine.waitingServed() ? "reads" : "-"
        }
    }

    static func run(_ events: [Event]) -> [String] {
        var machine = MemberConnectionStateMachine()
        return events.map { "\($0) → \(apply($0, to: &machine))" }
    }

    @Test func pipelinedApplicationRequestsGoOnAndADataPlaneRequestWaitsForTheirAnswers() {
        #expect(
            Self.run([
                .head("/a"), .toApplication, .body, .end, .head("/b"), .toApplication, .end, .head("/dp"), .toExchange, .applicationEnded,
                .toExchange, .applicationEnded, .head("/dp"), .toExchange, .body, .end,
            ]) == [
                "head /a → route", "to application → owed 1", "body → application", "end → application", "head /b → route",
                "to application → owed 2", "end → application", "head /dp → route", "to exchange → waits", "application ended → none",
                "to exchange → waits", "application ended → serveWaiting", "head /dp → route", "to exchange → started", "body → exchange",
                "end → exchange",
            ])
    }

    @Test func aRequestAfterTheDataPlanesWaitsUntilItsAnswerIsComplete() {
        #expect(
            Self.run([.head("/dp"), .toExchange, .end, .head("/a"), .read(), .read(waiting: true), .exchangeEnded, .head("/a"), .served])
                == [
                    "head /dp → route", "to exchange → started", "end → exchange", "head /a → wait", "read → reads",
                    "read waiting → held", "exchange ended → serveWaiting(releaseQuiesce: false)", "head /a → route", "served → reads",
                ])
        // An exchange that ends before the member's body does: the rest still goes its (ended) way, not elsewhere.
        #expect(
            Self.run([.head("/dp"), .toExchange, .body, .exchangeEnded, .body, .end, .head("/a")]).suffix(3)
                == ["body → exchange", "end → exchange", "head /a → route"])
        // An exchange that cannot carry another request closes the connection: nothing after it is taken.
        #expect(
            Self.run([.head("/dp"), .toExchange, .end, .exchangeEndedClosing, .head("/a")]).suffix(2)
                == ["exchange ended closing → close", "head /a → wait"])
    }

    @Test func anUpgradeWaitsForEveryAnswerAndIsDecidedOnceComplete() {
        #expect(
            Self.run([
                .head("/a"), .toApplication, .end, .head("/ws", upgrade: true), .applicationEnded, .head("/ws", upgrade: true), .body,
                .head("/b"), .read(), .end, .handOver, .served,
            ]) == [
                "head /a → route", "to application → owed 1", "end → application", "head /ws upgrade → wait",
                "application ended → serveWaiting", "head /ws upgrade → upgrade", "body → drop", "head /b → wait", "read → held",
                "end → decide upgrade /ws", "hand over → -", "served → -",
            ])
    }

    @Test func aRefusedUpgradeGoesToTheApplicationAndTheConnectionClosesAfterItsAnswer() {
        #expect(
            Self.run([.head("/ws", upgrade: true), .quiesce, .end, .upgradeRefused, .head("/b"), .toApplication, .applicationEnded, .applicationEnded])
                == [
                    "head /ws upgrade → upgrade", "quiesce → held", "end → decide upgrade /ws", "upgrade refused → to application, release quiesce true",
                    "head /b → route", "to application → owed 2", "application ended → none", "application ended → close",
                ])
        #expect(Self.run([.head("/ws", upgrade: true), .end, .memberGone, .upgradeRefused]).last == "upgrade refused → member gone")
    }

    @Test func aShutdownWaitsForTheDataPlanesAnswerButNotForTheApplications() {
        #expect(Self.run([.quiesce]) == ["quiesce → passed on"])
        #expect(Self.run([.head("/a"), .toApplication, .quiesce]).last == "quiesce → passed on")
        #expect(
            Self.run([.head("/dp"), .toExchange, .quiesce, .exchangeEnded, .quiesce]).suffix(3)
                == ["quiesce → held", "exchange ended → serveWaiting(releaseQuiesce: true)", "quiesce → passed on"])
    }

    @Test func readsAreHeldWhileAnythingWaitsAndResumeOnlyWhenNothingDoes() {
        #expect(
            Self.run([
                .head("/dp"), .toExchange, .read(exchangeHolds: true), .resume(exchangeHolds: true), .resume(waiting: true), .resume(), .resume(),
            ]).dropFirst(2) == ["read held by exchange → held", "resume held by exchange → -", "resume waiting → -", "resume → reads", "resume → -"])
        // A tunnel's connection is read by the tunnel.
        #expect(Self.run([.head("/ws", upgrade: true), .read(), .end, .handOver, .resume()]).last == "resume → -")
        #expect(Self.run([.memberGone, .head("/a")]).last == "head /a → wait")
    }
}
