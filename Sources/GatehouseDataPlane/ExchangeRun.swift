import NIOCore
import NIOHTTP1

/// One proxied request on the member's event loop: a connection from the loop's pool, the request written on it,
/// the app's answer mapped by the gateway's exchange and written to the member as it arrives. Reads of the app's
/// connection go on only while the member's connection is writable, so a member who stops reading holds at most a
/// read's worth of the body in memory.
///
/// A request's body (`requestBody`, `requestEnd`, as the member's connection reads it) goes to the app as it comes:
/// the head goes out once the body's first bytes or its end arrived (as on the application's path: nothing reaches
/// the app for a request whose body never starts), and the member's connection is read no further while the app's
/// takes no more (`holdsMemberReads`, `resumeMemberReads`). The read timeout counts from the request's end: a slow
/// upload is the listener's business (its body deadline), not the app's.
final class ExchangeRun {
    private enum State {
        case connecting
        case awaitingHead
        /// The app's head is in; the member's waits for the body's first bytes.
        case heldForFirstChunk
        case streaming
        case done
    }

    private let exchange: any DataPlaneExchange
    private let member: ChannelHandlerContext
    private let pool: UpstreamPool
    private let readTimeout: TimeAmount
    /// Called once, when the exchange is over; `closeMember` when the member's connection cannot carry another request.
    private let ended: (_ closeMember: Bool) -> Void
    /// The member asked to close after this answer (HTTP/1.1 `Connection: close`).
    private let memberKeepAlive: Bool
    private var state = State.connecting
    private var lease: UpstreamPool.Lease?
    /// The reader of the leased connection, which hands this exchange the app's answer.
    private var reader: UpstreamConnectionHandler?
    private var upstreamKeepAlive = true
    private var memberStatus: HTTPResponseStatus?
    private var retried = false
    private var readPaused = false
    /// The member's body parts that came before the app's connection did (one read's worth: the member is not read
    /// further meanwhile).
    private var pendingBody: [ByteBuffer] = []
    /// The member's request is complete (its end read).
    private var requestEnded = false
    /// The app's connection has been sent the head.
    private var headSent = false
    /// The member's body bytes read so far (never more than `requestBodyLength`).
    private var bodyBytes = 0
    /// The member's connection was not read further while the app's connection took no more: read on.
    private let resumeMemberReads: () -> Void
    /// The member connection's timer, lent for the read timeout (`timedOut`).
    private let timer: DeadlineTimer

    init(
        exchange: any DataPlaneExchange, member: ChannelHandlerContext, memberKeepAlive: Bool, pool: UpstreamPool, readTimeout: TimeAmount,
        timer: DeadlineTimer, resumeMemberReads: @escaping () -> Void = {}, ended: @escaping (_ closeMember: Bool) -> Void
    ) {
        self.resumeMemberReads = resumeMemberReads
        self.exchange = exchange
        self.timer = timer
        self.member = member
        self.memberKeepAlive = memberKeepAlive
        self.pool = pool
        self.readTimeout = readTimeout
        self.ended = ended
    }

    // MARK: - The upstream side

    func begin() {
        state = .connecting
        if let idle = pool.leaseIdle(exchange.endpoint) { return attach(idle) }
        pool.lease(exchange.endpoint).assumeIsolated().whenComplete { result in
            switch result {
            case .success(let lease): self.attach(lease)
            case .failure(let error): self.fail(.connect(error))
            }
        }
    }

    private func attach(_ lease: UpstreamPool.Lease) {
        guard state == .connecting else {
            // The member went away while the connection was on its way: it goes back unused.
            pool.release(lease, reusable: true)
            return
        }
        guard let handler = try? lease.channel.pipeline.syncOperations.handler(type: UpstreamConnectionHandler.self) else {
            pool.release(lease, reusable: false)
            fail(.reset)
            return
        }
        self.lease = lease
        reader = handler
        handler.exchange = self
        state = .awaitingHead
        headSent = false
        sendRequest()
    }

    // MARK: - The member's request

    /// A part of the member's body: passed on, or kept until the app's connection is there.
    func requestBody(_ chunk: ByteBuffer) {
        guard state != .done else { return }
        bodyBytes += chunk.readableBytes
        // Never more than the head told the app (an HTTP/2 stream's DATA beyond its `content-length`): bytes past it
        // would be read by the app as the start of another request.
        guard bodyBytes <= exchange.requestBodyLength else { return fail(.refused(RequestBodyMismatch()), closeMember: true) }
        pendingBody.append(chunk)
        sendRequest()
    }

    /// The member's request is complete.
    func requestEnd() {
        guard state != .done else { return }
        guard bodyBytes == exchange.requestBodyLength else { return fail(.refused(RequestBodyMismatch()), closeMember: true) }
        requestEnded = true
        sendRequest()
    }

    /// Writes what the app's connection has not been sent yet: the head (once the body started or the request
    /// ended), the body's parts, the end; the read timeout starts with the end.
    private func sendRequest() {
        guard let channel = lease?.channel, state == .awaitingHead || state == .heldForFirstChunk || state == .streaming,
            headSent || requestEnded || !pendingBody.isEmpty
        else { return }
        if !headSent {
            headSent = true
            channel.write(HTTPClientRequestPart.head(exchange.upstreamHead), promise: nil)
        }
        for chunk in pendingBody { channel.write(HTTPClientRequestPart.body(.byteBuffer(chunk)), promise: nil) }
        pendingBody.removeAll(keepingCapacity: true)
        if requestEnded {
            channel.write(HTTPClientRequestPart.end(nil), promise: nil)
            armTimer()
        }
        channel.flush()
        // What waited for the connection is out: the member's connection may be read on.
        if !requestEnded, channel.isWritable { resumeMemberReads() }
    }

    /// Whether the member's connection must not be read now: its body waits for the app's connection, or the app's
    /// connection takes no more of it.
    func holdsMemberReads() -> Bool {
        guard state != .done, !requestEnded else { return false }
        return !pendingBody.isEmpty || lease?.channel.isWritable == false
    }

    /// The app's connection takes more again.
    func upstreamWritable() {
        guard state != .done, !requestEnded, lease?.channel.isWritable == true else { return }
        resumeMemberReads()
    }

    func upstreamRead(_ part: HTTPClientResponsePart) {
        armTimer()
        do {
            switch part {
            case .head(let head):
                // Interim answers (`103 Early Hints`) are the app's business with itself: only the final one counts.
                guard head.status.code >= 200, state == .awaitingHead else { return }
                upstreamKeepAlive = head.isKeepAlive
                switch try exchange.start(head) {
                case .now(let memberHead):
                    state = .streaming
                    writeHead(memberHead)
                case .afterFirstChunk:
                    state = .heldForFirstChunk
                }
            case .body(let chunk):
                switch state {
                case .heldForFirstChunk: try startHeld(chunk)
                case .streaming: writeBody(try exchange.body(chunk))
                default: return
                }
            case .end:
                if state == .heldForFirstChunk { try startHeld(nil) }
                guard state == .streaming else { return }
                writeBody(exchange.end())
                member.write(NIOAny(HTTPServerResponsePart.end(nil)), promise: nil)
                // An app that answered before reading the whole request leaves its connection mid-request.
                complete(failure: nil, upstreamReusable: upstreamKeepAlive && requestEnded)
            }
        } catch {
            fail(.refused(error))
        }
    }

    func upstreamReadComplete() {
        guard state != .done, state != .connecting else { return }
        member.flush()
    }

    /// Whether the app's connection must not be read now: the member's connection takes no more for the moment.
    /// `memberWritable` reads on.
    func holdsReads() -> Bool {
        guard state != .done, !member.channel.isWritable else { return false }
        readPaused = true
        return true
    }

    /// The app's connection closed before its answer was complete. A reused connection that closed before any
    /// answer most likely timed out on the app's side just as the request went out: an idempotent request is sent
    /// once more, on another connection.
    func upstreamClosed() {
        guard state != .done, state != .connecting else { return }
        let unanswered = state == .awaitingHead
        if unanswered, lease?.isReused == true, exchange.isIdempotent, !retried {
            retried = true
            lease = nil
            reader = nil
            cancelTimer()
            begin()  // the head (and the end) again on the next connection: an idempotent request has no body
            return
        }
        lease = nil
        reader = nil
        fail(.reset)
    }

    // MARK: - The member's side

    func memberWritable() {
        guard readPaused, member.channel.isWritable, state != .done else { return }
        readPaused = false
        lease?.channel.read()
    }

    func memberClosed() {
        guard state != .done else { return }
        fail(.memberLeft)
    }

    // MARK: - Ending

    private func writeHead(_ head: HTTPResponseHead) {
        var head = head
        head.version = .http1_1
        if !memberKeepAlive { head.headers.replaceOrAdd(name: "connection", value: "close") }
        memberStatus = head.status
        member.write(NIOAny(HTTPServerResponsePart.head(head)), promise: nil)
    }

    /// The member's head of an answer held for its body's first bytes (`nil`: the body is empty), and those bytes.
    private func startHeld(_ chunk: ByteBuffer?) throws {
        let (memberHead, first) = try exchange.startAfterFirstChunk(chunk)
        state = .streaming
        writeHead(memberHead)
        writeBody(first)
    }

    private func writeBody(_ bytes: ByteBuffer?) {
        guard let bytes, bytes.readableBytes > 0 else { return }
        member.write(NIOAny(HTTPServerResponsePart.body(.byteBuffer(bytes))), promise: nil)
    }

    /// `closeMember`: the member's connection carries nothing more after the answer (its request's framing broke).
    private func fail(_ failure: DataPlaneFailure, closeMember: Bool = false) {
        guard state != .done else { return }
        if case .memberLeft = failure {
            complete(failure: failure, upstreamReusable: false)
            return
        }
        if memberStatus == nil {
            // Nothing went out yet: the member gets a whole answer that says what happened.
            let (head, body) = exchange.answer(failure)
            writeHead(head)
            writeBody(body)
            member.write(NIOAny(HTTPServerResponsePart.end(nil)), promise: nil)
            complete(failure: failure, upstreamReusable: false, closeMember: closeMember)
        } else {
            // The head is out: the answer can only end incomplete, by closing without its final chunk.
            complete(failure: failure, upstreamReusable: false, closeMember: true)
        }
    }

    private func complete(failure: DataPlaneFailure?, upstreamReusable: Bool, closeMember: Bool = false) {
        state = .done
        pendingBody = []
        cancelTimer()
        reader?.exchange = nil
        reader = nil
        if let lease {
            pool.release(lease, reusable: upstreamReusable)
            self.lease = nil
        }
        // Counted and logged before the answer's last bytes go out, so that whoever has read it sees it counted.
        exchange.finished(status: memberStatus, failure: failure)
        member.flush()
        ended(closeMember || !memberKeepAlive)
    }

    /// The read timeout counts from the last bytes of the app: each read moves the deadline.
    private func armTimer() {
        timer.set(in: readTimeout)
    }

    /// The app sent nothing for the read timeout. The connection is closed on release, after the exchange let go of
    /// it (no retry of a slow app).
    func timedOut() {
        guard state != .done, state != .connecting else { return }
        fail(.timeout)
    }

    private func cancelTimer() {
        timer.stop()
    }
}
