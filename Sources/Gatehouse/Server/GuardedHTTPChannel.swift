import GatehouseDataPlane
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1

/// A server child channel with `RequestFramingGuard` placed right after the HTTP/1 decoder of whatever pipeline
/// `inner` builds (here: Hummingbird's HTTP/1), and the data plane right after the guard: what the data plane
/// answers (its proxied pages, and WebSocket upgrades on any request of the connection) never reaches the application,
/// and everything it writes passes the guard.
struct GuardedHTTPChannel<Inner: ServerChildChannel>: ServerChildChannel {
    typealias Value = Inner.Value

    let inner: Inner
    let limits: RequestFramingGuard.Limits
    let draining: Draining
    let dataPlane: MemberDataPlane?

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        inner.setup(channel: channel, logger: logger).flatMapThrowing { value in
            let pipeline = channel.pipeline.syncOperations
            let decoder = try pipeline.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
            let guardHandler = RequestFramingGuard(limits: limits, draining: draining)
            try pipeline.addHandler(guardHandler, position: .after(decoder))
            if let dataPlane {
                try pipeline.addHandler(dataPlane.handler(), position: .after(guardHandler))
            }
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        await inner.handle(value: value, logger: logger)
    }
}
