import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP2
import NIOSSL
import NIOTLS

/// A server child channel that speaks TLS with the context `ListenerTLS` holds when the connection arrives (a
/// reloaded certificate is used from the next handshake), then what ALPN settles: HTTP/2 (`h2`, offered first) through
/// `MemberHTTP2Channel`, or HTTP/1.1 through `http1` (the framing guard, the data plane and WebSocket upgrades).
struct ListenerTLSChannel<HTTP1: ServerChildChannel>: ServerChildChannel {
    typealias Negotiated = NIONegotiatedHTTPVersion<HTTP1.Value, MemberHTTP2Channel.Value>

    struct Value: ServerChildChannelValue {
        let negotiated: EventLoopFuture<Negotiated>
        let channel: any Channel
    }

    let http1: HTTP1
    /// Nil when the listener offers HTTP/1.1 only.
    let http2: MemberHTTP2Channel?
    let tls: ListenerTLS

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            let pipeline = channel.pipeline.syncOperations
            try pipeline.addHandler(NIOSSLServerHandler(context: tls.context))
            let negotiation = NIOTypedApplicationProtocolNegotiationHandler<Negotiated> { result in
                switch result {
                case .negotiated("h2") where http2 != nil:
                    return http2!.setup(channel: channel, logger: logger).map { .http2($0) }
                case .negotiated("http/1.1"), .fallback:
                    return http1.setup(channel: channel, logger: logger).map { .http1_1($0) }
                case .negotiated:
                    // Nothing else is offered: a client that claims another protocol is not one of ours.
                    return channel.close().flatMap { channel.eventLoop.makeFailedFuture(NIOHTTP2Errors.invalidALPNToken()) }
                }
            }
            try pipeline.addHandler(negotiation)
            return Value(negotiated: negotiation.protocolNegotiationResult, channel: channel)
        }
    }

    func handle(value: Value, logger: Logger) async {
        do {
            switch try await value.negotiated.get() {
            case .http1_1(let connection): await http1.handle(value: connection, logger: logger)
            case .http2(let connection): await http2?.handle(value: connection, logger: logger)
            }
        } catch {
            logger.debug("TLS connection ended before its protocol was settled", metadata: ["error": .string("\(error)")])
        }
    }
}
