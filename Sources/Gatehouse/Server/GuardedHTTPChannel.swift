import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1

/// A server child channel with `RequestFramingGuard` placed right after the HTTP/1 decoder of whatever pipeline
/// `inner` builds (here: HTTP/1 with WebSocket upgrades).
struct GuardedHTTPChannel<Inner: ServerChildChannel>: ServerChildChannel {
    typealias Value = Inner.Value

    let inner: Inner
    let limits: RequestFramingGuard.Limits
    let draining: Draining

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        inner.setup(channel: channel, logger: logger).flatMapThrowing { value in
            let decoder = try channel.pipeline.syncOperations.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
            try channel.pipeline.syncOperations.addHandler(RequestFramingGuard(limits: limits, draining: draining), position: .after(decoder))
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        await inner.handle(value: value, logger: logger)
    }
}
