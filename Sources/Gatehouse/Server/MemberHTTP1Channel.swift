import GatehouseDataPlane
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1

/// HTTP/1.1 on the member listener, on the gateway's own reader and writer: bytes are framed by
/// `HTTP1RequestReader` (heads as `RequestHead`, ranges into the bytes they came in) and answers written by
/// `HTTP1ResponseWriter`; `RequestFramingGuard` comes right after the reader, the data plane after the guard. What
/// the data plane answers (its proxied pages, and WebSocket upgrades on any request of the connection) never reaches
/// the application, and everything it writes passes the guard. What it leaves to the application goes on as NIO's
/// HTTP parts, made only then, into Hummingbird's codec and an async channel answered by the same responder as
/// HTTP/2, as Hummingbird's own HTTP/1 channel would.
struct MemberHTTP1Channel: HTTPChannelHandler {
    typealias Value = NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>

    let responder: Responder
    let limits: RequestFramingGuard.Limits
    let draining: Draining
    let dataPlane: MemberDataPlane

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            let writer = HTTP1ResponseWriter()
            try channel.pipeline.syncOperations.addHandlers([
                writer, ByteToMessageHandler(HTTP1RequestReader(limits: limits.reader, answers: writer)),
                RequestFramingGuard(limits: limits, draining: draining), dataPlane.handler(), HTTP1ToHTTPServerCodec(secure: false),
                HTTPConnectionStateHandler(logger: logger),
            ])
            return try Value(wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: true))
        }
    }

    func handle(value: Value, logger: Logger) async {
        await handleHTTP(asyncChannel: value, logger: logger)
    }
}
