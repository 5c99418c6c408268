import HTTPTypes
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOHTTPTypes
import NIOHTTPTypesHTTP1

/// HTTP/2 on the member listener, once TLS settled `h2`. Each stream's request passes the data plane in HTTP/1.1's
/// terms (`MemberDataPlane.http2StreamHandlers`), on the connection's event loop; only a stream the data plane leaves
/// to the application becomes an async channel, answered in a task of the connection's by the same responder as
/// HTTP/1.1. So a proxied page over HTTP/2 costs no Swift task, as over HTTP/1.1.
///
/// NIOHTTP2's limits hold the connection in: 100 concurrent streams, 16 KiB of headers, and its defences against
/// floods of resets (CVE-2023-44487), CONTINUATION frames and control frames. Its connection manager closes a
/// connection idle for `idleTimeout` and, when the gateway shuts down, sends `GOAWAY` and lets open streams finish.
struct MemberHTTP2Channel: HTTPChannelHandler {
    typealias ApplicationStream = NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>

    struct Value: ServerChildChannelValue {
        let channel: any Channel
        /// The streams left to the application, until the connection closes.
        let applicationStreams: AsyncStream<ApplicationStream>
    }

    let responder: Responder
    let dataPlane: MemberDataPlane
    let idleTimeout: TimeAmount

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            let (streams, handOff) = AsyncStream.makeStream(of: ApplicationStream.self)
            let manager = NIOHTTP2ServerConnectionManagementHandler(
                eventLoop: channel.eventLoop, configuration: .init(maxIdleTime: idleTimeout, maxAge: nil, maxGraceTime: nil, keepalive: nil))
            let pipeline = channel.pipeline.syncOperations
            _ = try pipeline.configureHTTP2Pipeline(
                mode: .server, connectionConfiguration: .init(), streamConfiguration: .init(), streamDelegate: manager.http2StreamDelegate
            ) { stream in
                stream.eventLoop.makeCompletedFuture {
                    try stream.pipeline.syncOperations.addHandlers(dataPlane.http2StreamHandlers() + [ApplicationStreamHandOff(streams: handOff)])
                }
            }
            try pipeline.addHandler(manager)
            try pipeline.addHandler(HTTP2ConnectionEnd())
            // The connection was active before ALPN chose HTTP/2: the manager's idle timer starts now.
            manager.channelActive(context: try pipeline.context(handler: manager))
            channel.closeFuture.whenComplete { _ in handOff.finish() }
            return Value(channel: channel, applicationStreams: streams)
        }
    }

    func handle(value: Value, logger: Logger) async {
        await withDiscardingTaskGroup { group in
            for await stream in value.applicationStreams {
                group.addTask { await handleHTTP(asyncChannel: stream, logger: logger) }
            }
        }
    }
}

/// The last handler of an HTTP/2 stream: the first request part that reaches it (the data plane left the request to
/// the application) turns the stream into an async channel for the connection's task, and goes on into it.
final class ApplicationStreamHandOff: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart

    let streams: AsyncStream<MemberHTTP2Channel.ApplicationStream>.Continuation

    init(streams: AsyncStream<MemberHTTP2Channel.ApplicationStream>.Continuation) {
        self.streams = streams
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        do {
            let stream = try MemberHTTP2Channel.ApplicationStream(wrappingChannelSynchronously: context.channel)
            context.fireChannelRead(data)
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
            if case .terminated = streams.yield(stream) { context.close(promise: nil) }
        } catch {
            context.fireErrorCaught(error)
            context.close(promise: nil)
        }
    }
}

/// The last handler of an HTTP/2 connection: a client that closed its side can send nothing more (not even the
/// acknowledgement a graceful close waits for), and a connection error ends the connection, so either closes it.
final class HTTP2ConnectionEnd: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTP2Frame

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .inputClosed = event as? ChannelEvent {
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
