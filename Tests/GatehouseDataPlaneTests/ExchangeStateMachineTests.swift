import NIOCore
import NIOHTTP1
import Testing

@testable import GatehouseDataPlane

/// The exchange's order alone: each row is a sequence of events and what the machine answers to each, written as
/// `event → answer`.
@Suite struct ExchangeStateMachineTests {
    enum Event: CustomStringConvertible {
        case connecting, attached, send
        /// A part of the member's body, of this many bytes.
        case body(Int)
        case end
        case answerHead(Int, keepAlive: Bool)
        case started(held: Bool)
        case headWritten
        case answerBody, answerEnd
        case closed(reused: Bool)
        case fail, memberLeft, completed
        case holdsMemberReads(upstreamWritable: Bool?)
        case holdsUpstreamReads(memberWritable: Bool)
        case resumesUpstreamReads(memberWritable: Bool)
        case timeout
        case holdForStore, keep, storeAnswered

        var description: String {
            switch self {
            case .connecting: "connecting"
            case .attached: "attached"
            case .send: "send"
            case .body(let bytes): "body \(bytes)"
            case .end: "end"
            case .answerHead(let code, let keepAlive): "head \(code)\(keepAlive ? "" : " close")"
            case .started(let held): held ? "held" : "started"
            case .headWritten: "head written"
            case .answerBody: "answer body"
            case .answerEnd: "answer end"
            case .closed(let reused): reused ? "reused closed" : "closed"
            case .fail: "fail"
            case .memberLeft: "member left"
            case .completed: "completed"
            case .holdsMemberReads(let writable): "holds member reads \(writable.map(String.init) ?? "unconnected")"
            case .holdsUpstreamReads(let writable): "holds upstream reads \(writable)"
            case .resumesUpstreamReads(let writable): "resumes upstream reads \(writable)"
            case .timeout: "timeout"
            case .holdForStore: "hold for store"
            case .keep: "keep"
            case .storeAnswered: "store answered"
            }
        }
    }

    static func apply(_ event: Event, to machine: inout ExchangeStateMachine) -> String {
        switch event {
        case .connecting:
            machine.connecting()
            return "-"
        case .attached: return machine.attached() ? "use" : "release unused"
        case .send:
            guard let send = machine.nextSend() else { return "nothing" }
            var parts: [String] = []
            if send.head { parts.append("head") }
            parts += send.body.map { "\($0.readableBytes)" }
            if send.end { parts.append("end") }
            return parts.joined(separator: "+")
        case .body(let bytes): return "\(machine.requestBody(ByteBuffer(repeating: 0x61, count: bytes)))"
        case .end: return "\(machine.requestEnd())"
        case .answerHead(let code, let keepAlive): return machine.answerHead(statusCode: code, keepAlive: keepAlive) ? "final" : "ignored"
        case .started(let held):
            machine.answerStarted(held: held)
            return "\(machine.state)"
        case .headWritten:
            machine.memberHeadWritten(.ok)
            return "-"
        case .answerBody: return "\(machine.answerBody())"
        case .answerEnd:
            let (startsHeld, completes) = machine.answerEnd()
            return (startsHeld ? "start held, " : "") + (completes ? "complete reusable=\(machine.upstreamReusable)" : "no completion")
        case .closed(let reused): return "\(machine.upstreamClosed(wasReused: reused))"
        case .fail: return "\(machine.fail(memberLeft: false))"
        case .memberLeft: return "\(machine.fail(memberLeft: true))"
        case .completed:
            machine.completed()
            return "-"
        case .holdsMemberReads(let writable): return "\(machine.holdsMemberReads(upstreamWritable: writable))"
        case .holdsUpstreamReads(let writable): return "\(machine.holdsUpstreamReads(memberWritable: writable))"
        case .resumesUpstreamReads(let writable): return "\(machine.resumesUpstreamReads(memberWritable: writable))"
        case .timeout: return machine.timeoutFails ? "fails" : "ignored"
        case .holdForStore:
            machine.holdForStore()
            return "\(machine.state)"
        case .keep:
            guard machine.keepsAnswerParts else { return "passes" }
            machine.keep(.body(ByteBuffer(string: "x")))
            return "kept"
        case .storeAnswered:
            guard let (kept, closed) = machine.storeAnswered() else { return "over" }
            return "\(kept.count) kept" + (closed ? ", upstream closed" : "")
        }
    }

    /// Runs `events` and returns `event → answer` for each.
    static func run(_ events: [Event], bodyLength: Int = 0, isIdempotent: Bool = true) -> [String] {
        var machine = ExchangeStateMachine(requestBodyLength: bodyLength, isIdempotent: isIdempotent)
        return events.map { "\($0) → \(apply($0, to: &machine))" }
    }

    @Test func aGetGoesOutWholeOnceTheConnectionIsThere() {
        #expect(
            Self.run([.connecting, .end, .send, .attached, .send, .send, .answerHead(200, keepAlive: true), .started(held: false), .headWritten,
                .answerBody, .answerEnd])
                == [
                    "connecting → -", "end → accepted", "send → nothing", "attached → use", "send → head+end", "send → nothing",
                    "head 200 → final", "started → streaming", "head written → -", "answer body → pass",
                    "answer end → complete reusable=true",
                ])
    }

    @Test func aBodyWaitsForTheConnectionAndTheHeadGoesWithItsFirstBytes() {
        #expect(
            Self.run(
                [.connecting, .attached, .send, .holdsMemberReads(upstreamWritable: true), .body(3), .send, .body(2), .body(1),
                    .holdsMemberReads(upstreamWritable: true), .send, .holdsMemberReads(upstreamWritable: false), .end, .send,
                    .holdsMemberReads(upstreamWritable: false)],
                bodyLength: 6, isIdempotent: false)
                == [
                    "connecting → -", "attached → use", "send → nothing", "holds member reads true → false", "body 3 → accepted",
                    "send → head+3", "body 2 → accepted", "body 1 → accepted", "holds member reads true → true", "send → 2+1",
                    "holds member reads false → true", "end → accepted", "send → end", "holds member reads false → false",
                ])
        // Before the connection: the kept part holds the member's reads.
        #expect(
            Self.run([.connecting, .body(4), .holdsMemberReads(upstreamWritable: nil), .attached, .send], bodyLength: 4, isIdempotent: false)
                == ["connecting → -", "body 4 → accepted", "holds member reads unconnected → true", "attached → use", "send → head+4"])
    }

    @Test(arguments: [
        // More than the head said, in one part or over two; fewer at the end.
        ([Event.body(5)], 4, "body 5 → mismatch"),
        ([Event.body(3), .body(2)], 4, "body 2 → mismatch"),
        ([Event.body(3), .end], 4, "end → mismatch"),
        // A GET with a body it did not announce.
        ([Event.body(1)], 0, "body 1 → mismatch"),
    ])
    func aBodyOfAnotherLengthThanTheHeadSaidIsRefused(events: [Event], length: Int, last: String) {
        #expect(Self.run([.connecting, .attached] + events, bodyLength: length, isIdempotent: false).last == last)
    }

    @Test func partsAfterTheExchangeEndedAreDropped() {
        // The app answered before reading the whole body: its connection is not reused, the rest is nobody's.
        #expect(
            Self.run(
                [.connecting, .attached, .body(2), .send, .answerHead(200, keepAlive: true), .started(held: false), .headWritten, .answerEnd,
                    .completed, .body(2), .end, .send, .fail, .timeout],
                bodyLength: 4, isIdempotent: false).suffix(10)
                == [
                    "head 200 → final", "started → streaming", "head written → -", "answer end → complete reusable=false", "completed → -",
                    "body 2 → ignore", "end → ignore", "send → nothing", "fail → ignore", "timeout → ignored",
                ])
    }

    @Test func interimAnswersAndAHeadOutOfTurnAreIgnored() {
        #expect(
            Self.run([.connecting, .attached, .end, .send, .answerHead(103, keepAlive: true), .answerHead(200, keepAlive: false),
                .started(held: false), .answerHead(200, keepAlive: true), .answerEnd]).suffix(5)
                == [
                    "head 103 → ignored", "head 200 close → final", "started → streaming", "head 200 → ignored",
                    "answer end → complete reusable=false",
                ])
    }

    @Test func aHeldHeadGoesOutWithTheFirstChunkOrWithAnEmptyBody() {
        #expect(
            Self.run([.connecting, .attached, .end, .send, .answerHead(200, keepAlive: true), .started(held: true), .answerBody, .answerBody,
                .answerEnd]).suffix(4)
                == ["held → heldForFirstChunk", "answer body → startHeld", "answer body → pass", "answer end → complete reusable=true"])
        #expect(
            Self.run([.connecting, .attached, .end, .send, .answerHead(204, keepAlive: true), .started(held: true), .answerEnd]).last
                == "answer end → start held, complete reusable=true")
    }

    @Test func aReusedConnectionThatClosesUnansweredIsRetriedOnceForABodilessIdempotentRequest() {
        let events: [Event] = [.connecting, .attached, .end, .send, .closed(reused: true)]
        #expect(Self.run(events).last == "reused closed → retry")
        #expect(
            Self.run(events + [.connecting, .attached, .send, .closed(reused: true)]).suffix(3)
                == ["attached → use", "send → head+end", "reused closed → fail"])
        // A fresh connection, a POST, a request with a body, or an answer already begun: no second try.
        #expect(Self.run([.connecting, .attached, .end, .send, .closed(reused: false)]).last == "closed → fail")
        #expect(Self.run(events, isIdempotent: false).last == "reused closed → fail")
        #expect(
            Self.run([.connecting, .attached, .body(2), .end, .send, .closed(reused: true)], bodyLength: 2, isIdempotent: true).last
                == "reused closed → fail")
        #expect(
            Self.run([.connecting, .attached, .end, .send, .answerHead(200, keepAlive: true), .started(held: true), .closed(reused: true)]).last
                == "reused closed → fail")
        // No connection yet: the pool's answer decides (a connect failure), not a close.
        #expect(Self.run([.connecting, .closed(reused: true), .timeout]) == ["connecting → -", "reused closed → ignore", "timeout → ignored"])
    }

    @Test func aFailureAnswersBeforeTheHeadAndCutsShortAfterIt() {
        #expect(Self.run([.connecting, .fail]).last == "fail → answer")
        #expect(Self.run([.connecting, .attached, .end, .send, .timeout, .fail]).suffix(2) == ["timeout → fails", "fail → answer"])
        #expect(
            Self.run([.connecting, .attached, .end, .send, .answerHead(200, keepAlive: true), .started(held: false), .headWritten, .fail])
                .last == "fail → cutShort")
        #expect(Self.run([.connecting, .memberLeft, .completed, .attached]).suffix(2) == ["completed → -", "attached → release unused"])
    }

    @Test func theAppIsReadNoFurtherWhileTheMemberTakesNoMore() {
        #expect(
            Self.run([.connecting, .attached, .resumesUpstreamReads(memberWritable: true), .holdsUpstreamReads(memberWritable: true),
                .holdsUpstreamReads(memberWritable: false), .resumesUpstreamReads(memberWritable: false),
                .resumesUpstreamReads(memberWritable: true), .resumesUpstreamReads(memberWritable: true)]).dropFirst(2)
                == [
                    "resumes upstream reads true → false", "holds upstream reads true → false", "holds upstream reads false → true",
                    "resumes upstream reads false → false", "resumes upstream reads true → true", "resumes upstream reads true → false",
                ])
    }

    @Test func anAnswerHeldForTheStoreKeepsWhatComesAndIsReadNoFurther() {
        let held: [Event] = [.connecting, .attached, .end, .send, .answerHead(200, keepAlive: false), .holdForStore]
        #expect(
            Self.run(held + [.keep, .keep, .holdsUpstreamReads(memberWritable: true), .closed(reused: true), .storeAnswered,
                .started(held: false), .keep, .resumesUpstreamReads(memberWritable: true)]).suffix(9)
                == [
                    "hold for store → heldForStore", "keep → kept", "keep → kept", "holds upstream reads true → true",
                    "reused closed → ignore", "store answered → 2 kept, upstream closed", "started → streaming", "keep → passes",
                    "resumes upstream reads true → true",
                ])
        // What fails meanwhile fails as before the head went out; the store's answer then finds the exchange over.
        #expect(
            Self.run(held + [.timeout, .fail, .completed, .storeAnswered]).suffix(4)
                == ["timeout → fails", "fail → answer", "completed → -", "store answered → over"])
    }
}
