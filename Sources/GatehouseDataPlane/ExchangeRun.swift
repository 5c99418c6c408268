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
///
/// What happens when, and what each event calls for, is `ExchangeStateMachine`'s; this class holds the channels, the
/// lease and the timer, and does what the machine answers.
final class ExchangeRun {
    private let exchange: any DataPlaneExchange
    private let member: ChannelHandlerContext
    private let pool: UpstreamPool
    private let readTimeout: TimeAmount
    /// Called once, when the exchange is over; `closeMember` when the member's connection cannot carry another request.
    private let ended: (_ closeMember: Bool) -> Void
    /// The member asked to close after this answer (HTTP/1.1 `Connection: close`).
    private let memberKeepAlive: Bool
    private var machine: ExchangeStateMachine
    private var lease: UpstreamPool.Lease?
    /// The reader of the leased connection, which hands this exchange the app's answer.
    private var reader: UpstreamConnectionHandler?
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
        machine = ExchangeStateMachine(requestBodyLength: exchange.requestBodyLength, isIdempotent: exchange.isIdempotent)
    }

    // MARK: - The upstream side

    func begin() {
        machine.connecting()
        if let idle = pool.leaseIdle(exchange.endpoint) { return attach(idle) }
        pool.lease(exchange.endpoint).assumeIsolated().whenComplete { result in
            switch result {
            case .success(let lease): self.attach(lease)
            case .failure(let error): self.fail(.connect(error))
            }
        }
    }

    private func attach(_ lease: UpstreamPool.Lease) {
        guard machine.attached() else {
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
        sendRequest()
    }

    // MARK: - The member's request

    /// A part of the member's body: passed on, or kept until the app's connection is there.
    func requestBody(_ chunk: ByteBuffer) {
        take(machine.requestBody(chunk))
    }

    /// The member's request is complete.
    func requestEnd() {
        take(machine.requestEnd())
    }

    private func take(_ step: ExchangeStateMachine.BodyStep) {
        switch step {
        case .ignore: return
        case .accepted: sendRequest()
        case .mismatch: fail(.refused(RequestBodyMismatch()), closeMember: true)
        }
    }

    /// Writes what the app's connection has not been sent yet; the read timeout starts with the end.
    private func sendRequest() {
        guard let channel = lease?.channel, let send = machine.nextSend() else { return }
        if send.head {
            reader?.expectAnswer(to: exchange.upstreamHead.method)
            channel.write(exchange.upstreamHead.bytes, promise: nil)
        }
        // The body's length is in the head: its parts go as they are, and its end is the last of them.
        for chunk in send.body { channel.write(chunk, promise: nil) }
        if send.end { armTimer() }
        channel.flush()
        // What waited for the connection is out: the member's connection may be read on.
        if !machine.requestEnded, channel.isWritable { resumeMemberReads() }
    }

    /// Whether the member's connection must not be read now: its body waits for the app's connection, or the app's
    /// connection takes no more of it.
    func holdsMemberReads() -> Bool {
        machine.holdsMemberReads(upstreamWritable: lease?.channel.isWritable)
    }

    /// The app's connection takes more again.
    func upstreamWritable() {
        guard machine.readsMemberBody, lease?.channel.isWritable == true else { return }
        resumeMemberReads()
    }

    func upstreamRead(_ part: HTTPClientResponsePart) {
        armTimer()
        if machine.keepsAnswerParts { return machine.keep(part) }
        do {
            switch part {
            case .head(let head):
                guard machine.answerHead(statusCode: Int(head.status.code), keepAlive: head.isKeepAlive) else { return }
                let start = try exchange.start(head)
                if let stored = exchange.answerMayStart(on: member.eventLoop) {
                    machine.holdForStore()
                    stored.assumeIsolated().whenComplete { result in
                        switch result {
                        case .success: self.storeAnswered(start)
                        case .failure(let error): self.fail(.refused(error))
                        }
                    }
                    return
                }
                answerStarts(start)
            case .body(let chunk):
                switch machine.answerBody() {
                case .startHeld: try startHeld(chunk)
                case .pass: writeBody(try exchange.body(chunk))
                case .drop: return
                }
            case .end:
                let (startsHeld, completes) = machine.answerEnd()
                if startsHeld { try startHeld(nil) }
                guard completes else { return }
                writeBody(exchange.end())
                member.write(NIOAny(HTTPServerResponsePart.end(nil)), promise: nil)
                complete(failure: nil, upstreamReusable: machine.upstreamReusable)
            }
        } catch {
            fail(.refused(error))
        }
    }

    private func answerStarts(_ start: ResponseStart) {
        switch start {
        case .now(let memberHead):
            machine.answerStarted(held: false)
            writeHead(memberHead)
        case .afterFirstChunk:
            machine.answerStarted(held: true)
        }
    }

    /// What the answer waited for is done: it goes on, with what the app sent meanwhile, in order.
    private func storeAnswered(_ start: ResponseStart) {
        guard let (kept, upstreamClosed) = machine.storeAnswered() else { return }
        answerStarts(start)
        for part in kept { upstreamRead(part) }
        if upstreamClosed {
            self.upstreamClosed()  // an answer the kept parts did not complete ends incomplete
        } else if machine.resumesUpstreamReads(memberWritable: member.channel.isWritable) {
            lease?.channel.read()
        }
        if machine.flushesAfterRead { member.flush() }
    }

    func upstreamReadComplete() {
        guard machine.flushesAfterRead else { return }
        member.flush()
    }

    /// Whether the app's connection must not be read now: the member's connection takes no more for the moment.
    /// `memberWritable` reads on.
    func holdsReads() -> Bool {
        machine.holdsUpstreamReads(memberWritable: member.channel.isWritable)
    }

    /// The app's connection closed before its answer was complete.
    func upstreamClosed() {
        let step = machine.upstreamClosed(wasReused: lease?.isReused == true)
        guard step != .ignore else { return }
        lease = nil
        reader = nil
        if step == .retry {
            cancelTimer()
            begin()  // the head and the end again, on the next connection
        } else {
            fail(.reset)
        }
    }

    // MARK: - The member's side

    func memberWritable() {
        guard machine.resumesUpstreamReads(memberWritable: member.channel.isWritable) else { return }
        lease?.channel.read()
    }

    func memberClosed() {
        fail(.memberLeft)
    }

    // MARK: - Ending

    private func writeHead(_ head: HTTPResponseHead) {
        var head = head
        head.version = .http1_1
        if !memberKeepAlive { head.headers.replaceOrAdd(name: "connection", value: "close") }
        machine.memberHeadWritten(head.status)
        member.write(NIOAny(HTTPServerResponsePart.head(head)), promise: nil)
    }

    /// The member's head of an answer held for its body's first bytes (`nil`: the body is empty), and those bytes.
    private func startHeld(_ chunk: ByteBuffer?) throws {
        let (memberHead, first) = try exchange.startAfterFirstChunk(chunk)
        writeHead(memberHead)
        writeBody(first)
    }

    private func writeBody(_ bytes: ByteBuffer?) {
        guard let bytes, bytes.readableBytes > 0 else { return }
        member.write(NIOAny(HTTPServerResponsePart.body(.byteBuffer(bytes))), promise: nil)
    }

    /// `closeMember`: the member's connection carries nothing more after the answer (its request's framing broke).
    private func fail(_ failure: DataPlaneFailure, closeMember: Bool = false) {
        var memberLeft = false
        if case .memberLeft = failure { memberLeft = true }
        switch machine.fail(memberLeft: memberLeft) {
        case .ignore: return
        case .complete: complete(failure: failure, upstreamReusable: false)
        case .answer:
            let (head, body) = exchange.answer(failure)
            writeHead(head)
            writeBody(body)
            member.write(NIOAny(HTTPServerResponsePart.end(nil)), promise: nil)
            complete(failure: failure, upstreamReusable: false, closeMember: closeMember)
        case .cutShort: complete(failure: failure, upstreamReusable: false, closeMember: true)
        }
    }

    private func complete(failure: DataPlaneFailure?, upstreamReusable: Bool, closeMember: Bool = false) {
        machine.completed()
        cancelTimer()
        reader?.exchange = nil
        reader = nil
        if let lease {
            pool.release(lease, reusable: upstreamReusable)
            self.lease = nil
        }
        // Counted and logged before the answer's last bytes go out, so that whoever has read it sees it counted.
        exchange.finished(status: machine.memberStatus, failure: failure)
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
        guard machine.timeoutFails else { return }
        fail(.timeout)
    }

    private func cancelTimer() {
        timer.stop()
    }
}
