import NIOCore
import NIOHTTP1

/// Sits in the member listener's pipeline after the framing guard and answers, on the connection's event loop, the
/// requests the gateway's `DataPlaneRoutes` take; every other request goes on to the application unchanged.
///
/// One connection may carry both kinds, and HTTP/1.1 answers are never reordered: a request the data plane takes
/// waits until the application has answered every request handed to it before, and any request after one the data
/// plane took waits until that answer is complete. While a request waits, the connection is not read further.
///
/// A WebSocket upgrade (which the routes leave to the application) turns the connection into frames: from the
/// `101` on, everything passes untouched. A shutdown's quiesce event waits for an answer under way here, so that the
/// application, which knows nothing of it, does not close the connection under it.
public final class DataPlaneHandler: ChannelDuplexHandler, RemovableChannelHandler {
    public typealias InboundIn = HTTPServerRequestPart
    public typealias InboundOut = HTTPServerRequestPart
    public typealias OutboundIn = HTTPServerResponsePart
    public typealias OutboundOut = HTTPServerResponsePart

    let routes: any DataPlaneRoutes
    let pools: UpstreamPools
    let readTimeout: TimeAmount
    private var pool: UpstreamPool?
    /// The read timeout of the exchange under way, one timer for the connection's life.
    private var timer: DeadlineTimer?
    /// Requests handed to the application whose answers have not ended.
    private var applicationAnswersOwed = 0
    /// The parts of the request being read go to the application.
    private var passing = false
    private var exchange: ExchangeRun?
    /// Parts that arrived while an earlier answer was under way, oldest first.
    private var waiting = CircularBuffer<HTTPServerRequestPart>()
    private var readHeld = false
    private var upgraded = false
    private var heldQuiesce = false
    private var isClosed = false

    public init(routes: any DataPlaneRoutes, pools: UpstreamPools, readTimeout: TimeAmount) {
        self.routes = routes
        self.pools = pools
        self.readTimeout = readTimeout
    }

    public func handlerAdded(context: ChannelHandlerContext) {
        pool = pools.pool(on: context.eventLoop)
        timer = DeadlineTimer(eventLoop: context.eventLoop) { [weak self] in self?.exchange?.timedOut() }
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !upgraded else {
            context.fireChannelRead(data)
            return
        }
        let part = unwrapInboundIn(data)
        if !waiting.isEmpty || !process(part, context: context) { waiting.append(part) }
    }

    public func read(context: ChannelHandlerContext) {
        if waiting.isEmpty {
            context.read()
        } else {
            readHeld = true
        }
    }

    public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        // Only the application's answers pass here; the data plane writes from its own place in the pipeline.
        guard !upgraded else {
            context.write(data, promise: promise)
            return
        }
        switch unwrapOutboundIn(data) {
        case .head(let head) where head.status == .switchingProtocols:
            upgraded = true
            context.write(data, promise: promise)
        case .end:
            context.write(data, promise: promise)
            applicationAnswersOwed -= 1
            if applicationAnswersOwed == 0 { serveWaiting(context: context) }
        default:
            context.write(data, promise: promise)
        }
    }

    public func channelWritabilityChanged(context: ChannelHandlerContext) {
        exchange?.memberWritable()
        context.fireChannelWritabilityChanged()
    }

    public func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent, exchange != nil {
            heldQuiesce = true
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    public func channelInactive(context: ChannelHandlerContext) {
        isClosed = true
        exchange?.memberClosed()
        timer?.cancel()
        context.fireChannelInactive()
    }

    public func handlerRemoved(context: ChannelHandlerContext) {
        isClosed = true
        exchange?.memberClosed()
        timer?.cancel()
    }

    // MARK: - Requests

    /// Takes one part; `false` when it must wait for an earlier answer (it is then kept, in order).
    private func process(_ part: HTTPServerRequestPart, context: ChannelHandlerContext) -> Bool {
        switch part {
        case .head(let head):
            guard exchange == nil, !isClosed else { return false }
            switch routes.route(head, peer: context.channel.remoteAddress) {
            case .application:
                passing = true
                applicationAnswersOwed += 1
                context.fireChannelRead(wrapInboundOut(part))
            case .proxy(let proxied):
                // Decided again once the application's answers are out (the session may have changed by then).
                guard applicationAnswersOwed == 0, let pool, let timer else { return false }
                passing = false
                let run = ExchangeRun(
                    exchange: proxied, member: context, memberKeepAlive: head.isKeepAlive || head.version.minor == 0, pool: pool,
                    readTimeout: readTimeout, timer: timer
                ) { [unowned self] closeMember in
                    self.exchangeEnded(closeMember: closeMember, context: context)
                }
                exchange = run
                run.begin()
            }
        case .body:
            if passing { context.fireChannelRead(wrapInboundOut(part)) }
        case .end:
            if passing {
                passing = false
                context.fireChannelRead(wrapInboundOut(part))
            }
        }
        return true
    }

    private func exchangeEnded(closeMember: Bool, context: ChannelHandlerContext) {
        exchange = nil
        if closeMember {
            isClosed = true
            waiting.removeAll()
            context.close(promise: nil)
            return
        }
        if heldQuiesce {
            heldQuiesce = false
            context.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        }
        serveWaiting(context: context)
    }

    /// Takes the waiting parts in order until one must wait again; reads resume once none waits.
    private func serveWaiting(context: ChannelHandlerContext) {
        while let part = waiting.first {
            guard process(part, context: context) else { return }
            waiting.removeFirst()
        }
        if readHeld {
            readHeld = false
            context.read()
        }
    }
}
