import NIOCore
import NIOHTTP1

/// The last handler of a pooled upstream connection: hands the app's answer to the exchange that holds the
/// connection. The connection reads on its own (its read interest stays registered between exchanges, no system call
/// per request to turn it on and off), except while the exchange holds reads: the member's connection takes no more
/// for the moment, and the exchange reads on when it does.
final class UpstreamConnectionHandler: ChannelDuplexHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundIn = ByteBuffer

    /// The exchange the connection is lent to; `nil` while it is idle in the pool.
    var exchange: ExchangeRun?
    /// The connection's answers' decoder, which is told of each request as it goes out.
    private let answers: HTTPResponseDecoder

    init(answers: HTTPResponseDecoder) {
        self.answers = answers
    }

    /// A request with `method` goes out: its answer is the next one (after a `HEAD`, an answer without a body).
    func expectAnswer(to method: HTTPMethod) {
        answers.write(data: .head(HTTPRequestHead(version: .http1_1, method: method, uri: "")))
    }

    func read(context: ChannelHandlerContext) {
        if exchange?.holdsReads() == true { return }
        context.read()
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

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        exchange?.upstreamWritable()
        context.fireChannelWritabilityChanged()
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
