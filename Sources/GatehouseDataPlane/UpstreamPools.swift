import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1

/// One `UpstreamPool` per event loop, made on first use there, each with HTTP/1.1 client connections whose answers
/// the data plane reads (`UpstreamConnectionHandler`).
public final class UpstreamPools: @unchecked Sendable {
    private let lock = NIOLock()
    /// Touched under the lock; each pool is used on its own loop only (which is what makes the class sendable).
    private var pools: [ObjectIdentifier: UpstreamPool] = [:]
    let limits: UpstreamPool.Limits
    /// How connections are made; `nil`: sockets, with `setUp`.
    let connector: (@Sendable (UpstreamEndpoint, any EventLoop) -> EventLoopFuture<any Channel>)?

    public init(limits: UpstreamPool.Limits, connector: (@Sendable (UpstreamEndpoint, any EventLoop) -> EventLoopFuture<any Channel>)? = nil) {
        self.limits = limits
        self.connector = connector
    }

    /// The pipeline of an upstream connection: the HTTP/1.1 answers' decoder, then the data plane's reader.
    public static func setUp(_ channel: any Channel) throws {
        // No request encoder: the gateway writes each head as bytes (`UpstreamRequestHead`) and bodies go as they are.
        let answers = HTTPResponseDecoder(leftOverBytesStrategy: .dropBytes)
        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(UpstreamResponseDecoder(decoder: answers)))
        try channel.pipeline.syncOperations.addHandler(UpstreamConnectionHandler(answers: answers))
    }

    /// The pool of `loop`; call on that loop.
    public func pool(on loop: any EventLoop) -> UpstreamPool {
        loop.preconditionInEventLoop()
        return lock.withLock {
            if let pool = pools[ObjectIdentifier(loop)] { return pool }
            let pool =
                if let connector {
                    UpstreamPool(eventLoop: loop, limits: limits, connector: connector)
                } else {
                    UpstreamPool(eventLoop: loop, limits: limits) { channel in channel.eventLoop.makeCompletedFuture { try Self.setUp(channel) } }
                }
            pools[ObjectIdentifier(loop)] = pool
            return pool
        }
    }

    /// Closes the idle connections of every pool, each on its loop.
    public func shutDown() async {
        let all = lock.withLock { Array(pools.values) }
        for pool in all {
            let bound = UnsafeTransfer(pool)
            try? await pool.eventLoop.submit { bound.value.shutDown() }.get()
        }
    }
}

/// A value handed to the loop it belongs to.
struct UnsafeTransfer<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
