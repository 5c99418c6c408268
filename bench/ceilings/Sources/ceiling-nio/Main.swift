import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix

/// The channel-level NIO ceiling: the browser's connection and a kept-alive upstream HTTP/1.1 connection from a pool
/// of the same event loop, glued by two handlers. Parts are forwarded as they arrive and flushed when a read burst
/// ends; reads of the upstream pause while the browser's connection is not writable. No task, no thread hop, no
/// session, no rewriting: what a data plane in the member listener's pipeline can reach on this machine.
///
/// Usage: ceiling-nio LISTEN_PORT UPSTREAM_PORT
@main
enum CeilingNIO {
    static func main() throws {
        let arguments = CommandLine.arguments
        guard arguments.count == 3, let port = Int(arguments[1]), let upstreamPort = Int(arguments[2]) else {
            fatalError("usage: ceiling-nio LISTEN_PORT UPSTREAM_PORT")
        }
        let group = MultiThreadedEventLoopGroup.singleton
        let upstream = try SocketAddress(ipAddress: "127.0.0.1", port: upstreamPort)
        let server = try ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                let pool = UpstreamPool.of(channel.eventLoop, address: upstream)
                return channel.pipeline.configureHTTPServerPipeline(withErrorHandling: true).flatMap {
                    channel.pipeline.addHandler(ProxyHandler(pool: pool))
                }
            }
            .bind(host: "127.0.0.1", port: port).wait()
        try server.closeFuture.wait()
    }
}

/// Idle upstream connections of one event loop; only ever touched on that loop.
final class UpstreamPool {
    private static var pools: [ObjectIdentifier: UpstreamPool] = [:]
    private static let lock = NIOLock()

    static func of(_ loop: EventLoop, address: SocketAddress) -> UpstreamPool {
        lock.withLock {
            if let pool = pools[ObjectIdentifier(loop)] { return pool }
            let pool = UpstreamPool(loop: loop, address: address)
            pools[ObjectIdentifier(loop)] = pool
            return pool
        }
    }

    let loop: EventLoop
    let address: SocketAddress
    private var idle: [Channel] = []

    init(loop: EventLoop, address: SocketAddress) {
        self.loop = loop
        self.address = address
    }

    func acquire() -> EventLoopFuture<Channel> {
        while let channel = idle.popLast() {
            if channel.isActive { return loop.makeSucceededFuture(channel) }
        }
        return ClientBootstrap(group: loop)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.pipeline.addHTTPClientHandlers().flatMap { channel.pipeline.addHandler(UpstreamHandler()) }
            }
            .connect(to: address)
    }

    func release(_ channel: Channel) {
        if channel.isActive, idle.count < 256 { idle.append(channel) } else { channel.close(promise: nil) }
    }
}

/// The browser's side: sends each request to an upstream connection and the answer back.
final class ProxyHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let pool: UpstreamPool
    private var upstream: Channel?
    /// Parts that arrived before the upstream connection was ready.
    private var waiting: [HTTPClientRequestPart] = []
    private var keepAlive = true

    init(pool: UpstreamPool) { self.pool = pool }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(var head):
            keepAlive = head.isKeepAlive
            head.headers.remove(name: "connection")
            head.headers.remove(name: "keep-alive")
            head.headers.replaceOrAdd(name: "host", value: "127.0.0.1")
            head.version = .http1_1
            waiting = [.head(head)]
            let server = context.channel
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            pool.acquire().whenComplete { result in
                let (handler, context) = loopBound.value
                switch result {
                case .success(let channel):
                    handler.attach(channel, server: server, context: context)
                case .failure:
                    context.close(promise: nil)
                }
            }
        case .body(let buffer):
            forward(.body(.byteBuffer(buffer)))
        case .end(let trailers):
            forward(.end(trailers))
            upstream?.flush()
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        upstream?.flush()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable, let upstream { upstream.read() }
    }

    func channelInactive(context: ChannelHandlerContext) {
        upstream?.close(promise: nil)
        upstream = nil
    }

    private func forward(_ part: HTTPClientRequestPart) {
        if let upstream { upstream.write(part, promise: nil) } else { waiting.append(part) }
    }

    private func attach(_ channel: Channel, server: Channel, context: ChannelHandlerContext) {
        guard server.isActive else { return pool.release(channel) }
        upstream = channel
        let handler = try! channel.pipeline.syncOperations.handler(type: UpstreamHandler.self)
        handler.exchange = UpstreamHandler.Exchange(
            server: context,
            finished: { [self] reusable in
                upstream = nil
                if reusable { pool.release(channel) } else { channel.close(promise: nil) }
                if !keepAlive { context.close(promise: nil) }
            })
        for part in waiting { channel.write(part, promise: nil) }
        waiting = []
        channel.flush()
        channel.read()
    }
}

/// The upstream's side: writes the answer into the browser's connection as it arrives.
final class UpstreamHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart

    struct Exchange {
        let server: ChannelHandlerContext
        let finished: (_ reusable: Bool) -> Void
    }

    var exchange: Exchange?
    private var reusable = true

    func handlerAdded(context: ChannelHandlerContext) {
        context.channel.setOption(.autoRead, value: false).whenFailure { _ in context.close(promise: nil) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let exchange else { return context.close(promise: nil) }
        let server = exchange.server
        switch unwrapInboundIn(data) {
        case .head(let head):
            reusable = head.isKeepAlive
            var headers = head.headers
            headers.remove(name: "connection")
            headers.remove(name: "keep-alive")
            server.write(
                NIOAny(HTTPServerResponsePart.head(HTTPResponseHead(version: .http1_1, status: head.status, headers: headers))), promise: nil)
        case .body(let buffer):
            server.write(NIOAny(HTTPServerResponsePart.body(.byteBuffer(buffer))), promise: nil)
        case .end(let trailers):
            server.writeAndFlush(NIOAny(HTTPServerResponsePart.end(trailers)), promise: nil)
            self.exchange = nil
            exchange.finished(reusable)
            reusable = true
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        guard let exchange else { return }
        exchange.server.flush()
        // Read on only while the browser takes what was sent; its writability change reads again.
        if exchange.server.channel.isWritable { context.read() }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if let exchange {
            self.exchange = nil
            exchange.server.close(promise: nil)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        context.close(promise: nil)
    }
}
