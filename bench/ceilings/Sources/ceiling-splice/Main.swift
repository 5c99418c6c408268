import NIOCore
import NIOPosix

/// The channel layer's own ceiling: no HTTP at all. Each browser connection gets one upstream connection of the same
/// event loop, and two handlers copy whatever bytes arrive on one to the other (swift-nio-examples' `connect-proxy`
/// glue): reads of one side pause while the other is not writable, writes are flushed when a read burst ends. A
/// keep-alive HTTP/1.1 client sees the upstream's answers unchanged. What is left between this and nginx is what
/// SwiftNIO's channels, pipelines and buffers cost on this machine; what is left between this and `ceiling-nio` is
/// NIO's HTTP codecs.
///
/// Usage: ceiling-splice LISTEN_PORT UPSTREAM_PORT
@main
enum CeilingSplice {
    static func main() throws {
        let arguments = CommandLine.arguments
        guard arguments.count == 3, let port = Int(arguments[1]), let upstreamPort = Int(arguments[2]) else {
            fatalError("usage: ceiling-splice LISTEN_PORT UPSTREAM_PORT")
        }
        let upstream = try SocketAddress(ipAddress: "127.0.0.1", port: upstreamPort)
        let server = try ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            // The browser's connection is registered (and read) once its upstream connection is there to take it.
            .childChannelInitializer { browser in
                ClientBootstrap(group: browser.eventLoop)
                    .channelOption(.socketOption(.tcp_nodelay), value: 1)
                    .connect(to: upstream)
                    .flatMapThrowing { app in
                        let (toApp, toBrowser) = Glue.pair()
                        try browser.pipeline.syncOperations.addHandler(toApp)
                        try app.pipeline.syncOperations.addHandler(toBrowser)
                    }
            }
            .bind(host: "127.0.0.1", port: port).wait()
        try server.closeFuture.wait()
    }
}

/// One side of the glue: what its channel reads goes out on its partner's channel.
final class Glue: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private var partner: Glue?
    private var context: ChannelHandlerContext?
    private var pendingRead = false

    static func pair() -> (Glue, Glue) {
        let first = Glue()
        let second = Glue()
        first.partner = second
        second.partner = first
        return (first, second)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        partner = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        partner?.context?.write(data, promise: nil)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        partner?.context?.flush()
    }

    func channelInactive(context: ChannelHandlerContext) {
        partner?.context?.close(promise: nil)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { partner?.readIfPending() }
    }

    func read(context: ChannelHandlerContext) {
        if partner?.context?.channel.isWritable ?? false {
            context.read()
        } else {
            pendingRead = true
        }
    }

    private func readIfPending() {
        guard pendingRead, let context else { return }
        pendingRead = false
        context.read()
    }
}
