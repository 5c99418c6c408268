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
/// lease and the timer, tells the machine each event, and carries out the action it answers (`run`).
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

    // MARK: - Events

    func begin() {
        run(machine.begin())
    }

    private func leaseConnection() {
        if let idle = pool.leaseIdle(exchange.endpoint) { return attach(idle) }
        pool.lease(exchange.endpoint).assumeIsolated().whenComplete { result in
            switch result {
            case .success(let lease): self.attach(lease)
            case .failure(let error): self.run(self.machine.fail(.connect(error)))
            }
        }
    }

    private func attach(_ lease: UpstreamPool.Lease) {
        let action = machine.attached()
        if case .releaseUnused = action {
            // The member went away while the connection was on its way: it goes back unused.
            pool.release(lease, reusable: true)
            return
        }
        guard let handler = try? lease.channel.pipeline.syncOperations.handler(type: UpstreamConnectionHandler.self) else {
            pool.release(lease, reusable: false)
            return run(machine.fail(.reset))
        }
        self.lease = lease
        reader = handler
        handler.exchange = self
        run(action)
    }

    /// A part of the member's body: passed on, or kept until the app's connection is there.
    func requestBody(_ chunk: ByteBuffer) {
        run(machine.requestBody(chunk))
    }

    /// The member's request is complete.
    func requestEnd() {
        run(machine.requestEnd())
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
        switch part {
        case .head(let head): run(machine.answerHead(head))
        case .body(let chunk): run(machine.answerBody(chunk))
        case .end: run(machine.answerEnd())
        }
    }

    func upstreamReadComplete() {
        run(machine.afterUpstreamRead)
    }

    /// Whether the app's connection must not be read now: the member's connection takes no more for the moment
    /// (`memberWritable` reads on), or the answer waits for the store.
    func holdsReads() -> Bool {
        machine.holdsUpstreamReads(memberWritable: member.channel.isWritable)
    }

    /// The app's connection closed before its answer was complete.
    func upstreamClosed() {
        let action = machine.upstreamClosed(wasReused: lease?.isReused == true)
        if case .none = action { return }
        lease = nil
        reader = nil
        run(action)
    }

    func memberWritable() {
        run(machine.memberWritabilityChanged(isWritable: member.channel.isWritable))
    }

    func memberClosed() {
        run(machine.memberLeft())
    }

    /// The app sent nothing for the read timeout. The connection is closed on release, after the exchange let go of
    /// it (no retry of a slow app).
    func timedOut() {
        run(machine.timedOut())
    }

    // MARK: - Actions

    /// Carries out what the machine answered. What fails while doing so (the gateway refuses the app's answer, or
    /// cannot transform it) is the next event.
    private func run(_ action: ExchangeStateMachine.Action) {
        do {
            switch action {
            case .none, .waitForStore: return
            case .lease(let retry):
                if retry { timer.stop() }  // the head and the end again, on the next connection
                leaseConnection()
            case .releaseUnused: preconditionFailure("answered to `attached` only")
            case .send(let head, let body, let end, let readsMemberOn): send(head: head, body: body, end: end, readsMemberOn: readsMemberOn)
            case .decide(let head): try decide(head)
            case .writeHead(let head): writeHead(head)
            case .startHeld(let chunk): try startHeld(chunk)
            case .startHeldAtEnd:
                try startHeld(nil)
                run(machine.answerEnd())
            case .forward(let chunk): writeBody(try exchange.body(chunk))
            case .finish(let upstreamReusable):
                writeBody(exchange.end())
                member.write(NIOAny(HTTPServerResponsePart.end(nil)), promise: nil)
                complete(failure: nil, upstreamReusable: upstreamReusable)
            case .resume(let head, let kept, let upstreamClosed, let readUpstream):
                if let head { writeHead(head) }
                for part in kept { upstreamRead(part) }
                if upstreamClosed {
                    self.upstreamClosed()  // an answer the kept parts did not complete ends incomplete
                } else if readUpstream {
                    lease?.channel.read()
                }
                run(machine.afterUpstreamRead)
            case .answerFailure(let failure, let closeMember):
                let (head, body) = exchange.answer(failure)
                writeHead(head)
                writeBody(body)
                member.write(NIOAny(HTTPServerResponsePart.end(nil)), promise: nil)
                complete(failure: failure, upstreamReusable: false, closeMember: closeMember)
            case .cutShort(let failure): complete(failure: failure, upstreamReusable: false, closeMember: true)
            case .abandon(let failure): complete(failure: failure, upstreamReusable: false)
            case .readUpstream: lease?.channel.read()
            case .flushMember: member.flush()
            }
        } catch {
            run(machine.fail(.refused(error)))
        }
    }

    /// Writes what the app's connection has not been sent yet; the read timeout starts with the end.
    private func send(head: Bool, body: [ByteBuffer], end: Bool, readsMemberOn: Bool) {
        guard let channel = lease?.channel else { return }
        if head {
            reader?.expectAnswer(to: exchange.upstreamHead.method)
            channel.write(exchange.upstreamHead.bytes, promise: nil)
        }
        // The body's length is in the head: its parts go as they are, and its end is the last of them.
        for chunk in body { channel.write(chunk, promise: nil) }
        if end { armTimer() }
        channel.flush()
        // What waited for the connection is out: the member's connection may be read on.
        if readsMemberOn, channel.isWritable { resumeMemberReads() }
    }

    /// The gateway maps the app's head; the member's answer may have to wait for the store.
    private func decide(_ head: HTTPResponseHead) throws {
        let start = try exchange.start(head)
        let stored = exchange.answerMayStart(on: member.eventLoop)
        run(machine.decided(start, waitsForStore: stored != nil))
        stored?.assumeIsolated().whenComplete { result in
            switch result {
            case .success: self.run(self.machine.storeAnswered(memberWritable: self.member.channel.isWritable))
            case .failure(let error): self.run(self.machine.fail(.refused(error)))
            }
        }
    }

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

    /// `closeMember`: the member's connection carries nothing more after the answer.
    private func complete(failure: DataPlaneFailure?, upstreamReusable: Bool, closeMember: Bool = false) {
        timer.stop()
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
}
