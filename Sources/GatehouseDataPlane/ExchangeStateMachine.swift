import NIOCore
import NIOHTTP1

/// The order of one proxied exchange, as a value: `ExchangeRun` tells it each event and carries out the `Action` it
/// answers. It holds no channel and calls nothing (async-http-client's `HTTP1ConnectionStateMachine` is the model):
/// what the exchange knows lives in the state it is in, every event answers one action, and an event that cannot
/// happen in a state is a programming error. So every order the member's request, the app's answer, the store and
/// the failures can come in is tested alone (`ExchangeStateMachineTests`).
///
/// The machine owns when the member's answer starts: at once, with the body's first bytes (the gateway reads them
/// before it decides the head), or once the store has the jar change the app's answer made (`decided`).
struct ExchangeStateMachine {
    /// The member's request as the app is sent it.
    struct Request {
        /// The length of the member's body as the app was told.
        let bodyLength: Int
        let isIdempotent: Bool
        /// Body parts not sent yet, in order (before the connection is there: one read's worth, the member's
        /// connection is not read further meanwhile).
        var pending: [ByteBuffer] = []
        /// The member's body bytes read so far (never more than `bodyLength`).
        var bodyBytes = 0
        /// The member's request is complete (its end read).
        var ended = false
        /// Sent once more, on another connection, after a reused one closed unanswered.
        var retried = false
        /// On the current connection.
        var headSent = false
        var endSent = false
    }

    /// The app's answer, once its final head came.
    struct Answer {
        /// The app's answer allows its connection another request.
        let upstreamKeepAlive: Bool
    }

    enum State {
        /// A connection is being leased (first, or again for a retry).
        case connecting(Request)
        /// The request goes out; no final head from the app yet.
        case awaitingHead(Request)
        /// The app's final head is in; the gateway maps it (`decided`).
        case deciding(Request, Answer)
        /// The app's head is in and decided (`start`); the member's answer waits for the store, and what the app
        /// sends meanwhile is kept, with whether its connection closed after it.
        case heldForStore(Request, Answer, start: ResponseStart, kept: [HTTPClientResponsePart], upstreamClosed: Bool)
        /// The member's head waits for the body's first bytes.
        case heldForFirstChunk(Request, Answer)
        case streaming(Request, Answer)
        case done
    }

    /// What the exchange does next.
    enum Action {
        case none
        /// Lease a connection (`attached` once it is there); for a retry, the read timeout stops first.
        case lease(retry: Bool)
        /// The connection came after the exchange ended: back to the pool, unused.
        case releaseUnused
        /// Write on the app's connection: the head (first), the body's parts, and the end (the read timeout starts).
        /// `readsMemberOn`: the member's body is not over, and its connection may be read on if the app's still
        /// takes more after the write.
        case send(head: Bool, body: [ByteBuffer], end: Bool, readsMemberOn: Bool)
        /// The app's final head: the gateway maps it (`decided`).
        case decide(HTTPResponseHead)
        /// The member's answer waits for the store (`storeAnswered`); the app's connection is read no further.
        case waitForStore
        /// The member's head goes out.
        case writeHead(HTTPResponseHead)
        /// The body's first bytes (`nil`: the body is empty) decide the member's head, which goes out with them.
        case startHeld(ByteBuffer?)
        /// A chunk of the app's body, for the member.
        case forward(ByteBuffer)
        /// The app's answer ended before the body's first bytes: the held head goes out (with an empty body), then
        /// the end is told again (`answerEnd`).
        case startHeldAtEnd
        /// The app's answer ended: what the transform held back goes out, and the exchange is complete.
        case finish(upstreamReusable: Bool)
        /// The store has the jar: the member's head goes out (when it was decided), then the parts kept meanwhile in
        /// order, then the answer ends incomplete if the app's connection closed after them, else the app's
        /// connection is read on (`readUpstream`, when the member's takes more).
        case resume(head: HTTPResponseHead?, kept: [HTTPClientResponsePart], upstreamClosed: Bool, readUpstream: Bool)
        /// Nothing went out yet: the member gets a whole answer that says what happened, and the exchange ends
        /// (`closeMember`: the member's connection carries nothing more).
        case answerFailure(DataPlaneFailure, closeMember: Bool)
        /// The head is out: the answer can only end incomplete, by closing without its final part.
        case cutShort(DataPlaneFailure)
        /// The member left: nothing is written, the exchange ends.
        case abandon(DataPlaneFailure)
        /// Read the app's connection on (the member's takes more again).
        case readUpstream
        /// Flush what was written to the member after a read of the app's connection.
        case flushMember
    }

    private(set) var state: State
    /// The status of the member's head, once it went out (kept after the exchange ended, for its log line).
    private(set) var memberStatus: HTTPResponseStatus?
    /// The app's connection is not read while the member's takes no more.
    private var upstreamReadsPaused = false

    init(requestBodyLength: Int, isIdempotent: Bool) {
        state = .connecting(Request(bodyLength: requestBodyLength, isIdempotent: isIdempotent))
    }

    // MARK: - The app's connection

    /// The exchange begins: a connection is leased.
    func begin() -> Action {
        guard case .connecting = state else { preconditionFailure("an exchange begins once") }
        return .lease(retry: false)
    }

    /// A leased connection arrived.
    mutating func attached() -> Action {
        switch state {
        case .connecting(var request):
            request.headSent = false
            request.endSent = false
            state = .awaitingHead(request)
            return nextSend()
        case .done: return .releaseUnused
        default: preconditionFailure("a connection arrived for an exchange that has one")
        }
    }

    /// The app's connection closed before its answer was complete.
    mutating func upstreamClosed(wasReused: Bool) -> Action {
        switch state {
        case .connecting, .done: return .none
        case .heldForStore(let request, let answer, let start, let kept, _):
            // An app that answered in full and closed (`Connection: close`) while the answer was held: its parts are
            // kept, and the answer ends where they end.
            state = .heldForStore(request, answer, start: start, kept: kept, upstreamClosed: true)
            return .none
        case .awaitingHead(var request)
        where wasReused && request.isIdempotent && request.bodyLength == 0 && !request.retried:
            // A reused connection closed before any answer (most likely timed out on the app's side just as the
            // request went out): an idempotent request without a body goes once more (RFC 9110 §9.2.2).
            request.retried = true
            state = .connecting(request)
            return .lease(retry: true)
        case .awaitingHead, .deciding, .heldForFirstChunk, .streaming:
            return fail(.reset)
        }
    }

    // MARK: - The member's request

    /// A part of the member's body: passed on, or kept until the app's connection is there.
    mutating func requestBody(_ chunk: ByteBuffer) -> Action {
        guard var request = state.request else { return .none }
        request.bodyBytes += chunk.readableBytes
        // Never more than the head told the app (an HTTP/2 stream's DATA beyond its `content-length`): bytes past it
        // would be read by the app as the start of another request.
        guard request.bodyBytes <= request.bodyLength else { return fail(.refused(RequestBodyMismatch()), closeMember: true) }
        request.pending.append(chunk)
        state.request = request
        return nextSend()
    }

    /// The member's request is complete.
    mutating func requestEnd() -> Action {
        guard var request = state.request else { return .none }
        guard request.bodyBytes == request.bodyLength else { return fail(.refused(RequestBodyMismatch()), closeMember: true) }
        request.ended = true
        state.request = request
        return nextSend()
    }

    /// What to write on the app's connection now, if anything: the head once the body started or the request ended
    /// (nothing reaches the app for a request whose body never starts), the body's parts, the end.
    private mutating func nextSend() -> Action {
        guard var request = state.request, state.isConnected, request.headSent || request.ended || !request.pending.isEmpty else {
            return .none
        }
        let head = !request.headSent
        let end = request.ended && !request.endSent
        let body = request.pending
        guard head || !body.isEmpty || end else { return .none }
        request.headSent = true
        request.endSent = request.endSent || end
        request.pending.removeAll(keepingCapacity: true)
        state.request = request
        return .send(head: head, body: body, end: end, readsMemberOn: !request.ended)
    }

    /// Whether the member's connection must not be read now: its body waits for the app's connection, or the app's
    /// connection (`upstreamWritable`, `nil` without one) takes no more of it.
    func holdsMemberReads(upstreamWritable: Bool?) -> Bool {
        guard let request = state.request, !request.ended else { return false }
        return !request.pending.isEmpty || upstreamWritable == false
    }

    /// Whether the member's body is still to be read (the member's connection is read on when the app's takes more
    /// again).
    var readsMemberBody: Bool {
        guard let request = state.request else { return false }
        return !request.ended
    }

    // MARK: - The app's answer

    /// The app's head. Interim answers (`103 Early Hints`) are the app's business with itself.
    mutating func answerHead(_ head: HTTPResponseHead) -> Action {
        if case .heldForStore = state { return keep(.head(head)) }
        guard head.status.code >= 200, case .awaitingHead(let request) = state else { return .none }
        state = .deciding(request, Answer(upstreamKeepAlive: head.isKeepAlive))
        return .decide(head)
    }

    /// The gateway decided the member's head (`start`), and whether it waits for the store first.
    mutating func decided(_ start: ResponseStart, waitsForStore: Bool) -> Action {
        guard case .deciding(let request, let answer) = state else { preconditionFailure("decided without a head to decide") }
        if waitsForStore {
            state = .heldForStore(request, answer, start: start, kept: [], upstreamClosed: false)
            return .waitForStore
        }
        return started(start, request, answer)
    }

    private mutating func started(_ start: ResponseStart, _ request: Request, _ answer: Answer) -> Action {
        switch start {
        case .now(let head):
            state = .streaming(request, answer)
            return .writeHead(head)
        case .afterFirstChunk:
            state = .heldForFirstChunk(request, answer)
            return .none
        }
    }

    /// The store has the jar change: the answer goes on. `memberWritable`: whether the app's connection may be read
    /// on after the kept parts.
    mutating func storeAnswered(memberWritable: Bool) -> Action {
        guard case .heldForStore(let request, let answer, let start, let kept, let upstreamClosed) = state else { return .none }
        let head: HTTPResponseHead?
        if case .writeHead(let now) = started(start, request, answer) { head = now } else { head = nil }
        let readUpstream = !upstreamClosed && memberWritable && upstreamReadsPaused
        if readUpstream { upstreamReadsPaused = false }
        return .resume(head: head, kept: kept, upstreamClosed: upstreamClosed, readUpstream: readUpstream)
    }

    mutating func answerBody(_ chunk: ByteBuffer) -> Action {
        switch state {
        case .heldForStore: return keep(.body(chunk))
        case .heldForFirstChunk(let request, let answer):
            state = .streaming(request, answer)
            return .startHeld(chunk)
        case .streaming: return .forward(chunk)
        case .connecting, .awaitingHead, .deciding, .done: return .none
        }
    }

    mutating func answerEnd() -> Action {
        switch state {
        case .heldForStore: return keep(.end(nil))
        case .heldForFirstChunk(let request, let answer):
            state = .streaming(request, answer)
            return .startHeldAtEnd
        case .streaming(let request, let answer):
            state = .done
            // Reused only after the app read the whole request (an app that answered before reading it all leaves its
            // connection mid-request) and kept it alive.
            return .finish(upstreamReusable: answer.upstreamKeepAlive && request.ended)
        case .connecting, .awaitingHead, .deciding, .done: return .none
        }
    }

    private mutating func keep(_ part: HTTPClientResponsePart) -> Action {
        guard case .heldForStore(let request, let answer, let start, var kept, let closed) = state else { preconditionFailure("not held") }
        kept.append(part)
        state = .heldForStore(request, answer, start: start, kept: kept, upstreamClosed: closed)
        return .none
    }

    /// The member's head went out.
    mutating func memberHeadWritten(_ status: HTTPResponseStatus) {
        memberStatus = status
    }

    /// A read of the app's connection is over.
    var afterUpstreamRead: Action { state.isConnected ? .flushMember : .none }

    /// Whether the app's connection is read no further now: the member's connection is not writable, or the answer
    /// waits for the store.
    mutating func holdsUpstreamReads(memberWritable: Bool) -> Bool {
        switch state {
        case .connecting, .done: return false
        case .heldForStore: break
        case .awaitingHead, .deciding, .heldForFirstChunk, .streaming: if memberWritable { return false }
        }
        upstreamReadsPaused = true
        return true
    }

    /// The member's connection's writability changed.
    mutating func memberWritabilityChanged(isWritable: Bool) -> Action {
        guard upstreamReadsPaused, isWritable, state.isConnected else { return .none }
        if case .heldForStore = state { return .none }
        upstreamReadsPaused = false
        return .readUpstream
    }

    // MARK: - Ending

    /// The app sent nothing for the read timeout (it counts only once a connection is there).
    mutating func timedOut() -> Action {
        state.isConnected ? fail(.timeout) : .none
    }

    mutating func memberLeft() -> Action { fail(.memberLeft) }

    /// The exchange fails (`closeMember`: the member's connection carries nothing more after the answer).
    mutating func fail(_ failure: DataPlaneFailure, closeMember: Bool = false) -> Action {
        if case .done = state { return .none }
        state = .done
        if case .memberLeft = failure { return .abandon(failure) }
        return memberStatus == nil ? .answerFailure(failure, closeMember: closeMember) : .cutShort(failure)
    }
}

extension ExchangeStateMachine.State {
    /// The member's request, while the exchange goes on.
    var request: ExchangeStateMachine.Request? {
        get {
            switch self {
            case .connecting(let request), .awaitingHead(let request), .deciding(let request, _), .heldForStore(let request, _, _, _, _),
                .heldForFirstChunk(let request, _), .streaming(let request, _):
                request
            case .done: nil
            }
        }
        set {
            guard let newValue else { return }
            switch self {
            case .connecting: self = .connecting(newValue)
            case .awaitingHead: self = .awaitingHead(newValue)
            case .deciding(_, let answer): self = .deciding(newValue, answer)
            case .heldForStore(_, let answer, let start, let kept, let closed):
                self = .heldForStore(newValue, answer, start: start, kept: kept, upstreamClosed: closed)
            case .heldForFirstChunk(_, let answer): self = .heldForFirstChunk(newValue, answer)
            case .streaming(_, let answer): self = .streaming(newValue, answer)
            case .done: return
            }
        }
    }

    /// An app connection is attached and the exchange goes on.
    var isConnected: Bool {
        switch self {
        case .connecting, .done: false
        case .awaitingHead, .deciding, .heldForStore, .heldForFirstChunk, .streaming: true
        }
    }

    /// The state's name, for tests and logs.
    var name: String {
        switch self {
        case .connecting: "connecting"
        case .awaitingHead: "awaitingHead"
        case .deciding: "deciding"
        case .heldForStore: "heldForStore"
        case .heldForFirstChunk: "heldForFirstChunk"
        case .streaming: "streaming"
        case .done: "done"
        }
    }
}
