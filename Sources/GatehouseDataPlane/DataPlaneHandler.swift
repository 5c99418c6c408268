import NIOCore
import NIOHTTP1

/// Sits in the member listener's pipeline after the framing guard and answers, on the connection's event loop, the
/// requests the gateway's `DataPlaneRoutes` take; every other request goes on to the application unchanged.
///
/// One connection may carry both kinds, and HTTP/1.1 answers are never reordered: a request the data plane takes
/// waits until the application has answered every request handed to it before, and any request after one the data
/// plane took waits until that answer is complete. While a request waits, the connection is not read further.
///
/// A WebSocket upgrade, on any request of the connection (in the same order), is the gateway's `DataPlaneUpgrades`
/// decision: a tunnel to the app, after which the connection's bytes go to the app's connection and back untouched
/// (`WebSocketTunnel`), or a plain request for the application (whose answer ends the connection). A shutdown's
/// quiesce event waits for an answer under way here, and never reaches the application during a tunnel, so that the
/// application, which knows nothing of either, does not close the connection under it.
///
/// When a request may go, and where the parts after its head go, is `MemberConnectionStateMachine`'s; this class
/// holds the waiting parts, the exchange and the pipeline, and does what the machine answers.
public final class DataPlaneHandler: ChannelDuplexHandler, RemovableChannelHandler {
    public typealias InboundIn = MemberRequestPart
    /// What goes on to the application: its head as NIO's HTTP handlers take it, made only here.
    public typealias InboundOut = HTTPServerRequestPart
    public typealias OutboundIn = HTTPServerResponsePart
    public typealias OutboundOut = HTTPServerResponsePart

    let routes: any DataPlaneRoutes
    /// Without (an HTTP/2 stream, which has no upgrades), every request goes by `routes`.
    let upgrades: (any DataPlaneUpgrades)?
    let pools: UpstreamPools
    let readTimeout: TimeAmount
    private var pool: UpstreamPool?
    /// The read timeout of the exchange under way, one timer for the connection's life.
    private var timer: DeadlineTimer?
    private var machine = MemberConnectionStateMachine()
    /// The data plane's exchange under way (it may end before the member's request has been read to its end).
    private var exchange: ExchangeRun?
    /// Parts that arrived while an earlier answer was under way, oldest first.
    private var waiting = CircularBuffer<MemberRequestPart>()

    public init(routes: any DataPlaneRoutes, upgrades: (any DataPlaneUpgrades)?, pools: UpstreamPools, readTimeout: TimeAmount) {
        self.routes = routes
        self.upgrades = upgrades
        self.pools = pools
        self.readTimeout = readTimeout
    }

    public func handlerAdded(context: ChannelHandlerContext) {
        pool = pools.pool(on: context.eventLoop)
        timer = DeadlineTimer(eventLoop: context.eventLoop) { [weak self] in self?.exchange?.timedOut() }
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        if !waiting.isEmpty || !process(part, context: context) { waiting.append(part) }
    }

    public func read(context: ChannelHandlerContext) {
        if machine.read(partsWaiting: !waiting.isEmpty, exchangeHoldsReads: exchange?.holdsMemberReads() == true) { context.read() }
    }

    /// An exchange's app connection takes the member's body again.
    private func resumeReads(context: ChannelHandlerContext) {
        if machine.resumeReads(partsWaiting: !waiting.isEmpty, exchangeHoldsReads: exchange?.holdsMemberReads() == true) { context.read() }
    }

    public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        // Only the application's answers pass here; the data plane writes from its own place in the pipeline.
        switch unwrapOutboundIn(data) {
        case .head(var head) where machine.closesAfterApplicationAnswers:
            head.headers.replaceOrAdd(name: "connection", value: "close")
            context.write(wrapOutboundOut(.head(head)), promise: promise)
        case .end:
            switch machine.applicationAnswerEnded() {
            case .close:
                context.writeAndFlush(data).assumeIsolated().whenComplete { result in
                    promise?.completeWith(result)
                    context.close(promise: nil)
                }
            case .serveWaiting:
                context.write(data, promise: promise)
                serveWaiting(context: context)
            case .none:
                context.write(data, promise: promise)
            }
        default:
            context.write(data, promise: promise)
        }
    }

    public func channelWritabilityChanged(context: ChannelHandlerContext) {
        exchange?.memberWritable()
        context.fireChannelWritabilityChanged()
    }

    public func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent, machine.quiesce() { return }
        context.fireUserInboundEventTriggered(event)
    }

    public func channelInactive(context: ChannelHandlerContext) {
        memberGone()
        context.fireChannelInactive()
    }

    public func handlerRemoved(context: ChannelHandlerContext) {
        memberGone()
    }

    private func memberGone() {
        machine.memberGone()
        exchange?.memberClosed()
        timer?.cancel()
    }

    // MARK: - Requests

    /// Takes one part; `false` when it must wait for an earlier answer (it is then kept, in order).
    private func process(_ part: MemberRequestPart, context: ChannelHandlerContext) -> Bool {
        switch part {
        case .head(let head):
            switch machine.head(head, isUpgrade: upgrades != nil && Self.isWebSocketUpgrade(head)) {
            case .wait: return false
            case .upgrade: return true
            case .route: break
            }
            switch routes.route(head, peer: context.channel.remoteAddress) {
            case .application:
                machine.toApplication()
                context.fireChannelRead(wrapInboundOut(.head(head.httpRequestHead)))
            case .proxy(let proxied):
                guard let pool, let timer, machine.toExchange() else { return false }
                let run = ExchangeRun(
                    exchange: proxied, member: context, memberKeepAlive: head.isKeepAlive || head.version.minor == 0, pool: pool,
                    readTimeout: readTimeout, timer: timer, resumeMemberReads: { [unowned self] in self.resumeReads(context: context) }
                ) { [unowned self] closeMember in
                    self.exchangeEnded(closeMember: closeMember, context: context)
                }
                exchange = run
                run.begin()
            }
        case .body(let chunk):
            switch machine.body() {
            case .exchange: exchange?.requestBody(chunk)
            case .application: context.fireChannelRead(wrapInboundOut(.body(chunk)))
            case .decideUpgrade, .drop: break
            }
        case .end(let trailers):
            switch machine.end() {
            case .exchange: exchange?.requestEnd()
            case .application: context.fireChannelRead(wrapInboundOut(.end(trailers)))
            case .decideUpgrade(let head):
                upgrades?.upgrade(head.httpRequestHead, peer: context.channel.remoteAddress, eventLoop: context.eventLoop).assumeIsolated().whenComplete {
                    [unowned self] result in
                    self.upgradeDecided(head, result, context: context)
                }
            case .drop: break
            }
        }
        return true
    }

    static func isWebSocketUpgrade(_ head: RequestHead) -> Bool {
        head.version == .http1_1 && head.method == .GET && head.has(token: "websocket", inFieldsNamed: "upgrade")
    }

    /// The gateway decided an upgrade: a tunnel opens, or the request goes on to the application as a plain one.
    private func upgradeDecided(_ head: RequestHead, _ result: Result<DataPlaneUpgrade, any Error>, context: ChannelHandlerContext) {
        switch result {
        case .success(.tunnel(let answer, let upstream, let opened)):
            guard !machine.isClosed, let app = try? upstream.pipeline.syncOperations.handler(type: TunnelSide.self) else {
                upstream.close(promise: nil)
                return
            }
            openTunnel(answer, app: app, upstream: upstream, context: context, opened: opened)
        case .success(.application), .failure:
            guard let releaseQuiesce = machine.upgradeToApplication() else { return }
            context.fireChannelRead(wrapInboundOut(.head(head.httpRequestHead)))
            context.fireChannelRead(wrapInboundOut(.end(nil)))
            context.fireChannelReadComplete()
            if releaseQuiesce { context.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent()) }
            serveWaiting(context: context)
        }
    }

    /// The HTTP reader leaves the pipeline first (it parses nothing after an upgrade request, and a client sends
    /// nothing before the `101`); then the `101` goes out through the HTTP writer, which leaves too, and the tunnel's
    /// side takes this handler's place: the connection carries the tunnel's bytes from here on, and nothing reaches
    /// the application any more.
    private func openTunnel(
        _ answer: HTTPResponseHead, app: TunnelSide, upstream: any Channel, context: ChannelHandlerContext,
        opened: @escaping (WebSocketTunnel) -> Void
    ) {
        let pipeline = context.pipeline.syncOperations
        let decoderRemoved = context.eventLoop.makePromise(of: Void.self)
        do {
            pipeline.removeHandler(try pipeline.handler(type: ByteToMessageHandler<HTTP1RequestReader>.self), promise: decoderRemoved)
        } catch {
            decoderRemoved.fail(error)
        }
        decoderRemoved.futureResult.assumeIsolated().whenComplete { [unowned self] removed in
            do {
                guard case .success = removed, !machine.isClosed else { throw ChannelError.ioOnClosedChannel }
                context.writeAndFlush(wrapOutboundOut(.head(answer)), promise: nil)
                pipeline.removeHandler(try pipeline.handler(type: HTTP1ResponseWriter.self), promise: nil)
                let member = TunnelSide(.member)
                try pipeline.addHandler(member, position: .after(self))
                machine.handOver()
                pipeline.removeHandler(context: context, promise: nil)
                // Joined once this handler is gone: the reads the tunnel asks for go past no one who holds them.
                opened(try WebSocketTunnel(member: member, app: app))
            } catch {
                upstream.close(promise: nil)
                context.close(promise: nil)
            }
        }
    }

    private func exchangeEnded(closeMember: Bool, context: ChannelHandlerContext) {
        exchange = nil
        switch machine.exchangeEnded(closeMember: closeMember) {
        case .close:
            waiting.removeAll()
            context.close(promise: nil)
        case .serveWaiting(let releaseQuiesce):
            if releaseQuiesce { context.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent()) }
            serveWaiting(context: context)
        }
    }

    /// Takes the waiting parts in order until one must wait again; reads resume once none waits. What went on to
    /// the application is followed by a read's end, which is when the server takes what it was given.
    private func serveWaiting(context: ChannelHandlerContext) {
        let waited = waiting.count
        defer { if waiting.count < waited, !machine.handedOver { context.fireChannelReadComplete() } }
        while !machine.handedOver, let part = waiting.first {
            guard process(part, context: context) else { return }
            waiting.removeFirst()
        }
        if machine.waitingServed() { context.read() }
    }
}
