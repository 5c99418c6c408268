import NIOCore
import NIOHTTP1

/// The last handler of a pooled upstream connection: hands the app's answer to the exchange that holds the
/// connection, and reads only when asked (the exchange reads on while the member's connection takes what it gets).
final class UpstreamConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart

    /// The exchange the connection is lent to; `nil` while it is idle in the pool.
    var exchange: ExchangeRun?

    func handlerAdded(context: ChannelHandlerContext) {
        _ = context.channel.setOption(.autoRead, value: false)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let exchange else {
            // An idle connection has nothing to say: whatever came is not an answer to anything.
            context.close(promise: nil)
            return
        }
        exchange.upstreamRead(unwrapInboundIn(data))
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        exchange?.upstreamReadComplete()
    }

    func channelInactive(context: ChannelHandlerContext) {
        let exchange = self.exchange
        self.exchange = nil
        exchange?.upstreamClosed()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A malformed answer or a broken socket: the connection is done for, its exchange hears of it as a close.
        context.close(promise: nil)
    }
}
