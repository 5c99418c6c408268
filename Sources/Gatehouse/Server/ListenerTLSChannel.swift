import HummingbirdCore
import Logging
import NIOCore
import NIOSSL

/// A server child channel that speaks TLS before `base` (HTTP/1 with the framing guard and the data plane), with the
/// context `ListenerTLS` holds when the connection arrives: a reloaded certificate is used from the next handshake.
struct ListenerTLSChannel<Base: ServerChildChannel>: ServerChildChannel {
    typealias Value = Base.Value

    let base: Base
    let tls: ListenerTLS

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls.context))
        }.flatMap {
            base.setup(channel: channel, logger: logger)
        }
    }

    func handle(value: Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }
}
