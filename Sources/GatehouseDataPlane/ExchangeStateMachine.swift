import NIOCore
import NIOHTTP1

/// The order of one proxied exchange, as a value: `ExchangeRun` tells it what happened and does what it answers.
/// It holds no channel and calls nothing (async-http-client's `HTTP1ConnectionStateMachine` is the model), so every
/// order the member's request, the app's answer and the failures can come in is tested alone
/// (`ExchangeStateMachineTests`).
struct ExchangeStateMachine {
    enum State: Equatable {
        case connecting
        case awaitingHead
        /// The app's head is in; the member's answer waits for the gateway (a jar change that must reach the store
        /// other replicas read first), and what the app sends meanwhile is kept.
        case heldForStore
        /// The app's head is in; the member's waits for the body's first bytes.
        case heldForFirstChunk
        case streaming
        case done
    }

    /// What the app's connection has not been sent yet, in the order it goes out.
    struct Send: Equatable {
        var head: Bool
        var body: [ByteBuffer]
        var end: Bool
    }

    /// What a part of the member's body calls for.
    enum BodyStep: Equatable {
        /// The exchange is over (the app answered before reading it all): the part is dropped.
        case ignore
        /// Kept, to go out with the next `nextSend`.
        case accepted
        /// More bytes, or fewer, than the head told the app: the exchange is refused and the member's connection closed.
        case mismatch
    }

    /// Where a chunk of the app's body goes.
    enum AnswerBodyStep: Equatable {
        /// It is the first: the member's head is decided with it (`answerStarted`).
        case startHeld
        case pass
        case drop
    }

    /// What the app's connection closing calls for.
    enum ClosedStep: Equatable {
        case ignore
        /// A reused connection closed before any answer (most likely timed out on the app's side just as the request
        /// went out): an idempotent request goes once more, on another connection (RFC 9110 §9.2.2).
        case retry
        case fail
    }

    /// How a failure ends the exchange.
    enum FailStep: Equatable {
        case ignore
        /// The member left: nothing is written.
        case complete
        /// Nothing went out yet: the member gets a whole answer that says what happened.
        case answer
        /// The head is out: the answer can only end incomplete, by closing without its final chunk.
        case cutShort
    }

    private(set) var state = State.connecting
    /// The length of the member's body as the app was told.
    let requestBodyLength: Int
    let isIdempotent: Bool
    /// The app's answer allows its connection another request.
    private(set) var upstreamKeepAlive = true
    /// The status of the member's head, once it went out.
    private(set) var memberStatus: HTTPResponseStatus?
    private var retried = false
    /// The app's connection is not read while the member's takes no more.
    private var readPaused = false
    /// The member's body parts that came before the app's connection did (one read's worth: the member is not read
    /// further meanwhile).
    private var pendingBody: [ByteBuffer] = []
    /// The member's request is complete (its end read).
    private(set) var requestEnded = false
    private var headSent = false
    private var endSent = false
    /// The member's body bytes read so far (never more than `requestBodyLength`).
    private var bodyBytes = 0
    /// What the app sent while the answer was held for the store, in order.
    private var keptParts: [HTTPClientResponsePart] = []
    /// The app's connection closed while the answer was held: after the kept parts, the answer ends there.
    private var upstreamClosedWhileHeld = false

    init(requestBodyLength: Int, isIdempotent: Bool) {
        self.requestBodyLength = requestBodyLength
        self.isIdempotent = isIdempotent
    }

    private var isOver: Bool { state == .done }
    /// An app connection is attached and the exchange goes on.
    private var isConnected: Bool { state != .connecting && state != .done }

    // MARK: - The app's connection

    /// A connection is being leased (first, or again for a retry).
    mutating func connecting() {
        state = .connecting
    }

    /// A leased connection arrived: `false` when the exchange no longer wants it (it goes back unused).
    mutating func attached() -> Bool {
        guard state == .connecting else { return false }
        state = .awaitingHead
        headSent = false
        endSent = false
        return true
    }

    /// What to write on the app's connection now, if anything: the head once the body started or the request ended
    /// (nothing reaches the app for a request whose body never starts), the body's parts, the end.
    mutating func nextSend() -> Send? {
        guard isConnected, headSent || requestEnded || !pendingBody.isEmpty else { return nil }
        let send = Send(head: !headSent, body: pendingBody, end: requestEnded && !endSent)
        guard send.head || !send.body.isEmpty || send.end else { return nil }
        headSent = true
        endSent = endSent || send.end
        pendingBody.removeAll(keepingCapacity: true)
        return send
    }

    /// The app's connection closed before its answer was complete.
    mutating func upstreamClosed(wasReused: Bool) -> ClosedStep {
        guard isConnected else { return .ignore }
        // An app that answered in full and closed (`Connection: close`) while the answer was held: its parts are kept.
        if state == .heldForStore {
            upstreamClosedWhileHeld = true
            return .ignore
        }
        // Only a request without a body: its parts already went out and are not kept for a second connection.
        if state == .awaitingHead, wasReused, isIdempotent, requestBodyLength == 0, !retried {
            retried = true
            return .retry
        }
        return .fail
    }

    // MARK: - The member's request

    mutating func requestBody(_ chunk: ByteBuffer) -> BodyStep {
        guard !isOver else { return .ignore }
        bodyBytes += chunk.readableBytes
        // Never more than the head told the app (an HTTP/2 stream's DATA beyond its `content-length`): bytes past it
        // would be read by the app as the start of another request.
        guard bodyBytes <= requestBodyLength else { return .mismatch }
        pendingBody.append(chunk)
        return .accepted
    }

    mutating func requestEnd() -> BodyStep {
        guard !isOver else { return .ignore }
        guard bodyBytes == requestBodyLength else { return .mismatch }
        requestEnded = true
        return .accepted
    }

    /// Whether the member's connection must not be read now: its body waits for the app's connection, or the app's
    /// connection (`upstreamWritable`, `nil` without one) takes no more of it.
    func holdsMemberReads(upstreamWritable: Bool?) -> Bool {
        guard !isOver, !requestEnded else { return false }
        return !pendingBody.isEmpty || upstreamWritable == false
    }

    /// Whether the member's connection may be read on now that the app's takes more.
    var readsMemberBody: Bool { !isOver && !requestEnded }

    // MARK: - The app's answer

    /// The app's head (`statusCode`): `true` when it is the final answer the exchange waits for (interim answers
    /// such as `103 Early Hints` are the app's business with itself).
    mutating func answerHead(statusCode: Int, keepAlive: Bool) -> Bool {
        guard statusCode >= 200, state == .awaitingHead else { return false }
        upstreamKeepAlive = keepAlive
        return true
    }

    /// The member's answer waits for the gateway (`storeAnswered`); the app's connection is read no further.
    mutating func holdForStore() {
        state = .heldForStore
    }

    /// Whether a part of the app's answer is kept (`keep`) rather than passed on now.
    var keepsAnswerParts: Bool { state == .heldForStore }

    mutating func keep(_ part: HTTPClientResponsePart) {
        keptParts.append(part)
    }

    /// The answer may go on: the parts kept meanwhile, and whether the app's connection closed after them. `nil`
    /// when the exchange ended meanwhile.
    mutating func storeAnswered() -> (kept: [HTTPClientResponsePart], upstreamClosed: Bool)? {
        guard state == .heldForStore else { return nil }
        defer { keptParts = [] }
        return (keptParts, upstreamClosedWhileHeld)
    }

    /// The gateway decided the member's head: it goes out now, or with the body's first bytes.
    mutating func answerStarted(held: Bool) {
        state = held ? .heldForFirstChunk : .streaming
    }

    /// The member's head went out.
    mutating func memberHeadWritten(_ status: HTTPResponseStatus) {
        memberStatus = status
    }

    mutating func answerBody() -> AnswerBodyStep {
        switch state {
        case .heldForFirstChunk:
            state = .streaming
            return .startHeld
        case .streaming: return .pass
        default: return .drop
        }
    }

    /// The app's answer ended: whether a held head goes out now (with an empty body), and whether the exchange
    /// completes (it was streaming).
    mutating func answerEnd() -> (startHeld: Bool, completes: Bool) {
        let held = state == .heldForFirstChunk
        if held { state = .streaming }
        return (held, state == .streaming)
    }

    /// Whether the member's connection is flushed after the app's connection's read.
    var flushesAfterRead: Bool { isConnected }

    /// Whether the app's connection is read no further now (the member's connection is not writable).
    mutating func holdsUpstreamReads(memberWritable: Bool) -> Bool {
        guard !isOver, !memberWritable || state == .heldForStore else { return false }
        readPaused = true
        return true
    }

    /// Whether the app's connection is read on, now that the member's is writable again.
    mutating func resumesUpstreamReads(memberWritable: Bool) -> Bool {
        guard readPaused, memberWritable, !isOver else { return false }
        readPaused = false
        return true
    }

    /// Whether the read timeout ends the exchange (it counts only once a connection is there).
    var timeoutFails: Bool { isConnected }

    // MARK: - Ending

    mutating func fail(memberLeft: Bool) -> FailStep {
        guard !isOver else { return .ignore }
        if memberLeft { return .complete }
        return memberStatus == nil ? .answer : .cutShort
    }

    /// Whether the app's connection may carry another request after a complete answer: the app read the whole
    /// request (an app that answered before reading it all leaves its connection mid-request) and kept it alive.
    var upstreamReusable: Bool { upstreamKeepAlive && requestEnded }

    mutating func completed() {
        state = .done
        pendingBody = []
        keptParts = []
    }
}
