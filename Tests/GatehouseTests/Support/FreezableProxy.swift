import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A TCP relay on loopback in front of a server, whose connections can be frozen: nothing moves through them any
/// more while the TCP connections stay up, as on a network that silently drops packets. Connections opened after a
/// freeze flow normally.
final class FreezableProxy: Sendable {
    let port: Int
    private let server: any Channel
    private let open = NIOLockedValueBox<[any Channel]>([])

    init(to target: SocketAddress) async throws {
        let open = self.open
        server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelOption(.autoRead, value: false)
            .childChannelInitializer { inbound in
                ClientBootstrap(group: inbound.eventLoop).connect(to: target).flatMap { outbound in
                    open.withLockedValue { $0 += [inbound, outbound] }
                    let (toServer, toClient) = (Glue(), Glue())
                    toServer.partner = toClient
                    toClient.partner = toServer
                    return outbound.pipeline.addHandler(toClient).flatMap { inbound.pipeline.addHandler(toServer) }.flatMap {
                        inbound.setOption(.autoRead, value: true)
                    }
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        port = server.localAddress!.port!
    }

    /// Stops every connection open now from reading (and so from forwarding) anything.
    func freeze() {
        for channel in open.withLockedValue({ $0 }) { channel.setOption(.autoRead, value: false).whenComplete { _ in } }
    }

    func close() async {
        for channel in open.withLockedValue({ $0 }) { try? await channel.close() }
        try? await server.close()
    }

    /// Forwards what its channel reads to the partner's channel.
    final class Glue: ChannelDuplexHandler, @unchecked Sendable {
        typealias InboundIn = ByteBuffer
        typealias OutboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        var partner: Glue?
        var context: ChannelHandlerContext?

        func handlerAdded(context: ChannelHandlerContext) { self.context = context }
        func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let buffer = unwrapInboundIn(data)
            // Both ends live on one event loop.
            partner?.context?.writeAndFlush(NIOAny(buffer), promise: nil)
        }

        func channelInactive(context: ChannelHandlerContext) {
            partner?.context?.close(promise: nil)
        }
    }
}
