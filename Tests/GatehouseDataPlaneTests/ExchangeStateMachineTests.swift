import NIOCore
import NIOHTTP1
import Testing

@testable import GatehouseDataPlane

/// The exchange's order alone: each row is a sequence of events and what the machine answers to each, written as
/// `event → answer`.
@Suite struct ExchangeStateMachineTests {
    enum Event: CustomStringConvertible {
        case begin, attached
        /// A part of the member's body, of this many bytes.
        case body(Int)
        case end
        case head(Int, keepAlive: Bool)
        /// The gateway's decision on the app's head: the member's head now or after the first chunk, and whether it
        /// waits for the store.
        case decided(now: Bool, store: Bool)
        case headWritten
        case answerBody, answerEnd
        case closed(reused: Bool)
        case fail, memberLeft, timeout
        case holdsMemberReads(upstreamWritable: Bool?)
        case holdsUpstreamReads(memberWritable: Bool)
        case memberWritable(Bool)
        case storeAnswered(memberWritable: Bool)

        var description: String {
            switch self {
            case .begin: "begin"
            case .attached: "attached"
            case .body(let bytes): "body \(bytes)"
            case .end: "end"
            case .head(let code, let keepAlive): "head \(code)\(keepAlive ? "" : " close")"
            case .decided(let now, let store): "decided \(now ? "now" : "after first chunk")\(store ? ", store" : "")"
            case .headWritten: "head written"
            case .answerBody: "answer body"
            case .answerEnd: "answer end"
            case .closed(let reused): reused ? "reused closed" : "closed"
            case .fail: "fail"
            case .memberLeft: "member left"
            case .timeout: "timeout"
            case .holdsMemberReads(let writable): "holds member reads \(writable.map(String.init) ?? "unconnected")"
            case .holdsUpstreamReads(let writable): "holds upstream reads \(writable)"
            case .memberWritable(let writable): "member writable \(writable)"
            case .storeAnswered(let writable): "store answered\(writable ? "" : ", member full")"
            }
        }
    }

    static func describe(_ action: ExchangeStateMachine.Action) -> String {
        switch action {
        case .none: "-"
        case .lease(let retry): retry ? "lease again" : "lease"
        case .releaseUnused: "release unused"
        case .send(let head, let body, let end, let readsMemberOn):
            ((head ? ["head"] : []) + body.map { "\($0.readableBytes)" } + (end ? ["end"] : [])).joined(separator: "+")
                + (readsMemberOn ? ", reads member on" : "")
        case .decide(let head): "decide \(head.status.code)"
        case .waitForStore: "wait for store"
        case .writeHead(let head): "write head \(head.status.code)"
        case .startHeld(let chunk): "start held with \(chunk?.readableBytes ?? 0)"
        case .startHeldAtEnd: "start held at end"
        case .forward(let chunk): "forward \(chunk.readableBytes)"
        case .finish(let reusable): "finish reusable=\(reusable)"
        case .resume(let head, let kept, let closed, let read):
            ([head.map { "write head \($0.status.code)" }, "\(kept.count) kept", closed ? "upstream closed" : nil, read ? "read upstream" : nil]
                .compactMap { $0 }).joined(separator: ", ")
        case .answerFailure(let failure, let close): "answer \(name(failure))\(close ? ", close" : "")"
        case .cutShort(let failure): "cut short \(name(failure))"
        case .abandon(let failure): "abandon \(name(failure))"
        case .readUpstream: "read upstream"
        case .flushMember: "flush"
        }
    }

    static func name(_ failure: DataPlaneFailure) -> String {
        switch failure {
        case .connect: "connect"
        case .timeout: "timeout"
        case .reset: "reset"
        case .refused(let error): error is RequestBodyMismatch ? "mismatch" : "refused"
        case .memberLeft: "member left"
        }
    }

    static func apply(_ event: Event, to machine: inout ExchangeStateMachine) -> String {
        switch event {
        case .begin: return describe(machine.begin())
        case .attached: return describe(machine.attached())
        case .body(let bytes): return describe(machine.requestBody(ByteBuffer(repeating: 0x61, count: bytes)))
        case .end: return describe(machine.requestEnd())
        case .head(let code, let keepAlive):
            let head = HTTPResponseHead(
                version: .http1_1, status: HTTPResponseStatus(statusCode: code), headers: keepAlive ? [:] : ["connection": "close"])
            return describe(machine.answerHead(head))
        case .decided(let now, let store):
            return describe(machine.decided(now ? .now(HTTPResponseHead(version: .http1_1, status: .ok)) : .afterFirstChunk, waitsForStore: store))
                + " (\(machine.state.name))"
        case .headWritten:
            machine.memberHeadWritten(.ok)
            return "-"
        case .answerBody: return describe(machine.answerBody(ByteBuffer(string: "x")))
        case .answerEnd: return describe(machine.answerEnd())
        case .closed(let reused): return describe(machine.upstreamClosed(wasReused: reused))
        case .fail: return describe(machine.fail(.reset))
        case .memberLeft: return describe(machine.memberLeft())
        case .timeout: return describe(machine.timedOut())
        case .holdsMemberReads(let writable): return "\(machine.holdsMemberReads(upstreamWritable: writable))"
        case .holdsUpstreamReads(let writable): return "\(machine.holdsUpstreamReads(memberWritable: writable))"
        case .memberWritable(let writable): return describe(machine.memberWritabilityChanged(isWritable: writable))
        case .storeAnswered(let writable): return describe(machine.storeAnswered(memberWritable: writable))
        }
    }

    /// Runs `events` and returns `event → answer` for each.
    static func run(_ events: [Event], bodyLength: Int = 0, isIdempotent: Bool = true) -> [String] {
        var machine = ExchangeStateMachine(requestBodyLength: bodyLength, isIdempotent: isIdempotent)
        return events.map { "\($0) → \(apply($0, to: &machine))" }
    }

    /// A GET, its connection there, its head in: what the answers below start from.
    static let answering: [Event] = [.begin, .end, .attached, .head(200, keepAlive: true)]

    @Test func aGetGoesOutWholeOnceTheConnectionIsThere() {
        #expect(
            Self.run(Self.answering + [.decided(now: true, store: false), .headWritten, .answerBody, .answerEnd])
                == [
                    "begin → lease", "end → -", "attached → head+end", "head 200 → decide 200", "decided now → write head 200 (streaming)",
                    "head written → -", "answer body → forward 1", "answer end → finish reusable=true",
                ])
    }

    @Test func aBodyWaitsForTheConnectionAndTheHeadGoesWithItsFirstBytes() {
        #expect(
            Self.run(
                [.begin, .attached, .holdsMemberReads(upstreamWritable: true), .body(3), .body(2), .holdsMemberReads(upstreamWritable: false),
                    .end, .holdsMemberReads(upstreamWritable: false)],
                bodyLength: 5, isIdempotent: false)
                == [
                    "begin → lease", "attached → -", "holds member reads true → false", "body 3 → head+3, reads member on",
                    "body 2 → 2, reads member on", "holds member reads false → true", "end → end", "holds member reads false → false",
                ])
        // Before the connection: the kept part holds the member's reads, and goes with the head.
        #expect(
            Self.run([.begin, .body(4), .holdsMemberReads(upstreamWritable: nil), .attached], bodyLength: 4, isIdempotent: false)
                == ["begin → lease", "body 4 → -", "holds member reads unconnected → true", "attached → head+4, reads member on"])
    }

    @Test(arguments: [
        // More than the head said, in one part or over two; fewer at the end.
        ([Event.body(5)], 4, "body 5 → answer mismatch, close"),
        ([Event.body(3), .body(2)], 4, "body 2 → answer mismatch, close"),
        ([Event.body(3), .end], 4, "end → answer mismatch, close"),
        // A GET with a body it did not announce.
        ([Event.body(1)], 0, "body 1 → answer mismatch, close"),
    ])
    func aBodyOfAnotherLengthThanTheHeadSaidIsRefused(events: [Event], length: Int, last: String) {
        #expect(Self.run([.begin, .attached] + events, bodyLength: length, isIdempotent: false).last == last)
    }

    @Test func partsAfterTheExchangeEndedAreDropped() {
        // The app answered before reading the whole body: its connection is not reused, the rest is nobody's.
        #expect(
            Self.run(
                [.begin, .attached, .body(2), .head(200, keepAlive: true), .decided(now: true, store: false), .headWritten, .answerEnd,
                    .body(2), .end, .fail, .timeout, .memberLeft],
                bodyLength: 4, isIdempotent: false).suffix(8)
                == [
                    "decided now → write head 200 (streaming)", "head written → -", "answer end → finish reusable=false", "body 2 → -",
                    "end → -", "fail → -", "timeout → -", "member left → -",
                ])
    }

    @Test func interimAnswersAndAHeadOutOfTurnAreIgnored() {
        #expect(
            Self.run([.begin, .end, .attached, .head(103, keepAlive: true), .head(200, keepAlive: false), .decided(now: true, store: false),
                .head(200, keepAlive: true), .answerEnd]).suffix(5)
                == [
                    "head 103 → -", "head 200 close → decide 200", "decided now → write head 200 (streaming)", "head 200 → -",
                    "answer end → finish reusable=false",
                ])
    }

    @Test func aHeldHeadGoesOutWithTheFirstChunkOrWithAnEmptyBody() {
        #expect(
            Self.run(Self.answering + [.decided(now: false, store: false), .answerBody, .answerBody, .answerEnd]).suffix(4)
                == [
                    "decided after first chunk → - (heldForFirstChunk)", "answer body → start held with 1", "answer body → forward 1",
                    "answer end → finish reusable=true",
                ])
        // An empty body: the held head goes out, then the end is told again.
        #expect(
            Self.run(Self.answering + [.decided(now: false, store: false), .answerEnd, .answerEnd]).suffix(2)
                == ["answer end → start held at end", "answer end → finish reusable=true"])
    }

    @Test func aReusedConnectionThatClosesUnansweredIsRetriedOnceForABodilessIdempotentRequest() {
        let events: [Event] = [.begin, .end, .attached, .closed(reused: true)]
        #expect(Self.run(events).last == "reused closed → lease again")
        #expect(Self.run(events + [.attached, .closed(reused: true)]).suffix(2) == ["attached → head+end", "reused closed → answer reset"])
        // A fresh connection, a POST, a request with a body, or an answer already begun: no second try.
        #expect(Self.run([.begin, .end, .attached, .closed(reused: false)]).last == "closed → answer reset")
        #expect(Self.run(events, isIdempotent: false).last == "reused closed → answer reset")
        #expect(Self.run([.begin, .attached, .body(2), .end, .closed(reused: true)], bodyLength: 2).last == "reused closed → answer reset")
        #expect(Self.run(Self.answering + [.decided(now: false, store: false), .closed(reused: true)]).last == "reused closed → answer reset")
        #expect(
            Self.run(Self.answering + [.decided(now: true, store: false), .headWritten, .closed(reused: true)]).last
                == "reused closed → cut short reset")
        // No connection yet: the pool's answer decides (a connect failure), not a close.
        #expect(Self.run([.begin, .closed(reused: true), .timeout]) == ["begin → lease", "reused closed → -", "timeout → -"])
    }

    @Test func aFailureAnswersBeforeTheHeadAndCutsShortAfterIt() {
        #expect(Self.run([.begin, .fail]).last == "fail → answer reset")
        #expect(Self.run([.begin, .end, .attached, .timeout, .fail]).suffix(2) == ["timeout → answer timeout", "fail → -"])
        #expect(Self.run(Self.answering + [.decided(now: true, store: false), .headWritten, .fail]).last == "fail → cut short reset")
        #expect(Self.run([.begin, .memberLeft, .attached]).suffix(2) == ["member left → abandon member left", "attached → release unused"])
    }

    @Test func theAppIsReadNoFurtherWhileTheMemberTakesNoMore() {
        #expect(
            Self.run([.begin, .end, .attached, .memberWritable(true), .holdsUpstreamReads(memberWritable: true),
                .holdsUpstreamReads(memberWritable: false), .memberWritable(false), .memberWritable(true), .memberWritable(true)]).dropFirst(3)
                == [
                    "member writable true → -", "holds upstream reads true → false", "holds upstream reads false → true",
                    "member writable false → -", "member writable true → read upstream", "member writable true → -",
                ])
    }

    @Test func anAnswerHeldForTheStoreKeepsWhatComesAndIsReadNoFurther() {
        let held: [Event] = [.begin, .end, .attached, .head(200, keepAlive: false), .decided(now: true, store: true)]
        #expect(
            Self.run(held + [.answerBody, .answerEnd, .holdsUpstreamReads(memberWritable: true), .memberWritable(true), .closed(reused: true),
                .storeAnswered(memberWritable: true), .answerBody, .answerEnd]).suffix(9)
                == [
                    "decided now, store → wait for store (heldForStore)", "answer body → -", "answer end → -",
                    "holds upstream reads true → true", "member writable true → -", "reused closed → -",
                    "store answered → write head 200, 2 kept, upstream closed", "answer body → forward 1", "answer end → finish reusable=false",
                ])
        // Decided for after the first chunk, the connection open: the kept parts, then the app is read on.
        #expect(
            Self.run([.begin, .end, .attached, .head(200, keepAlive: true), .decided(now: false, store: true), .answerBody,
                .holdsUpstreamReads(memberWritable: true), .storeAnswered(memberWritable: true), .answerBody]).suffix(2)
                == ["store answered → 1 kept, read upstream", "answer body → start held with 1"])
        // What fails meanwhile fails as before the head went out; the store's answer then finds the exchange over.
        #expect(Self.run(held + [.timeout, .fail, .storeAnswered(memberWritable: true)]).suffix(3) == ["timeout → answer timeout", "fail → -", "store answered → -"])
    }
}
