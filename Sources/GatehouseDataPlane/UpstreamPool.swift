import NIOCore
import NIOPosix

/// Kept-alive connections to upstreams for one event loop, used only on that loop: a request served on a loop takes a
/// connection of the same loop, so nothing of the exchange ever changes threads.
///
/// Per endpoint at most `maximumConnections` are open; a lease beyond that waits, first come first served, for a
/// connection to be released or to close. An idle connection is closed after `idleTimeout`, and one the upstream
/// closed while idle is never handed out. A lease says whether its connection was used before: a request on a reused
/// connection that the upstream closed before answering may be sent once more, when it is idempotent.
public final class UpstreamPool {
    public struct Limits: Sendable {
        public var maximumConnections: Int
        public var idleTimeout: TimeAmount
        public var connectTimeout: TimeAmount

        public init(maximumConnections: Int = 64, idleTimeout: TimeAmount = .seconds(60), connectTimeout: TimeAmount = .seconds(10)) {
            self.maximumConnections = maximumConnections
            self.idleTimeout = idleTimeout
            self.connectTimeout = connectTimeout
        }
    }

    /// A connection lent to one exchange until `release`.
    public struct Lease: Sendable {
        public let channel: any Channel
        public let endpoint: UpstreamEndpoint
        /// It carried an exchange before this one.
        public let isReused: Bool
    }

    public enum Failure: Error, Equatable {
        case shutDown
    }

    private struct Idle {
        var channel: any Channel
        /// When it closes unless lent again.
        var until: NIODeadline
    }

    private struct Endpoint {
        var open = 0
        var idle: [Idle] = []
        var waiting = CircularBuffer<EventLoopPromise<Lease>>()
    }

    public let eventLoop: any EventLoop
    let limits: Limits
    /// Opens a connection to an endpoint with its pipeline set up (a socket, or in tests an embedded channel).
    public typealias Connector = (UpstreamEndpoint, any EventLoop) -> EventLoopFuture<any Channel>
    let connector: Connector
    private var endpoints: [UpstreamEndpoint: Endpoint] = [:]
    private var isShutDown = false
    /// One task closes the connections idle too long (`sweep`), instead of a timer per connection made at every
    /// release and cancelled at every lease.
    private var sweepTask: Scheduled<Void>?

    /// `setUp` sets up a new connection's pipeline (the HTTP/1.1 client handlers and whatever reads the answers).
    public convenience init(eventLoop: any EventLoop, limits: Limits, setUp: @escaping @Sendable (any Channel) -> EventLoopFuture<Void>) {
        self.init(eventLoop: eventLoop, limits: limits) { endpoint, loop in
            // The bootstrap runs on this loop, so the channel's futures complete here, where the pool may be touched.
            ClientBootstrap(group: loop)
                .connectTimeout(limits.connectTimeout)
                .channelOption(.socketOption(.tcp_nodelay), value: 1)
                .channelInitializer { channel in setUp(channel) }
                .connect(to: endpoint.address)
        }
    }

    public init(eventLoop: any EventLoop, limits: Limits, connector: @escaping Connector) {
        self.eventLoop = eventLoop
        self.limits = limits
        self.connector = connector
    }

    /// A connection to `endpoint`: an idle one if there is one, a new one while fewer than the maximum are open, else
    /// the next one released.
    public func lease(_ endpoint: UpstreamEndpoint) -> EventLoopFuture<Lease> {
        eventLoop.preconditionInEventLoop()
        guard !isShutDown else { return eventLoop.makeFailedFuture(Failure.shutDown) }
        if let idle = leaseIdle(endpoint) { return eventLoop.makeSucceededFuture(idle) }
        if endpoints[endpoint, default: Endpoint()].open < limits.maximumConnections {
            endpoints[endpoint, default: Endpoint()].open += 1
            return connect(endpoint)
        }
        let promise = eventLoop.makePromise(of: Lease.self)
        endpoints[endpoint, default: Endpoint()].waiting.append(promise)
        return promise.futureResult
    }

    /// An idle connection to `endpoint` at once, if there is one (the usual case: `lease` without a future).
    public func leaseIdle(_ endpoint: UpstreamEndpoint) -> Lease? {
        eventLoop.preconditionInEventLoop()
        guard !isShutDown else { return nil }
        // Changed in place: a copy of the endpoint's state would copy its list of idle connections each time.
        while let idle = endpoints[endpoint]?.idle.popLast() {
            if idle.channel.isActive { return Lease(channel: idle.channel, endpoint: endpoint, isReused: true) }
        }
        return nil
    }

    /// Gives the connection back after its exchange: kept for the next one when `reusable` (the answer ended cleanly
    /// and neither side asked to close), else closed.
    public func release(_ lease: Lease, reusable: Bool) {
        eventLoop.preconditionInEventLoop()
        guard reusable, lease.channel.isActive, !isShutDown else {
            lease.channel.close(promise: nil)
            return
        }
        if let waiter = endpoints[lease.endpoint, default: Endpoint()].waiting.popFirst() {
            waiter.succeed(Lease(channel: lease.channel, endpoint: lease.endpoint, isReused: true))
            return
        }
        let until = NIODeadline.now() + limits.idleTimeout
        endpoints[lease.endpoint, default: Endpoint()].idle.append(Idle(channel: lease.channel, until: until))
        if sweepTask == nil { scheduleSweep(at: until) }
    }

    private func scheduleSweep(at deadline: NIODeadline) {
        sweepTask = eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [weak self] in self?.sweep() }
    }

    /// Closes the connections whose idle time is up (the oldest are first in each list: leases take the newest),
    /// and wakes again for the next to expire.
    private func sweep() {
        sweepTask = nil
        let now = NIODeadline.now()
        var next: NIODeadline?
        for endpoint in endpoints.keys {
            while let oldest = endpoints[endpoint]?.idle.first, oldest.until <= now {
                endpoints[endpoint]!.idle.removeFirst()
                oldest.channel.close(promise: nil)
            }
            if let oldest = endpoints[endpoint]?.idle.first { next = min(next ?? oldest.until, oldest.until) }
        }
        if let next, !isShutDown { scheduleSweep(at: next) }
    }

    /// Closes every idle connection and refuses what waits; connections lent out close when released.
    public func shutDown() {
        eventLoop.preconditionInEventLoop()
        isShutDown = true
        sweepTask?.cancel()
        sweepTask = nil
        for (endpoint, state) in endpoints {
            for idle in state.idle { idle.channel.close(promise: nil) }
            for waiter in state.waiting { waiter.fail(Failure.shutDown) }
            endpoints[endpoint]?.idle = []
            endpoints[endpoint]?.waiting = []
        }
    }

    /// How many connections to `endpoint` are open and how many of them idle (for tests and metrics).
    public func count(_ endpoint: UpstreamEndpoint) -> (open: Int, idle: Int) {
        eventLoop.preconditionInEventLoop()
        let state = endpoints[endpoint] ?? Endpoint()
        return (state.open, state.idle.count)
    }

    private func connect(_ endpoint: UpstreamEndpoint) -> EventLoopFuture<Lease> {
        connector(endpoint, eventLoop)
            .assumeIsolated()
            .map { channel in
                channel.closeFuture.assumeIsolated().whenComplete { _ in self.closed(channel, endpoint: endpoint) }
                return Lease(channel: channel, endpoint: endpoint, isReused: false)
            }
            .flatMapErrorThrowing { error in
                self.connectFailed(endpoint)
                throw error
            }
            .nonisolated()
    }

    /// A connection closed (by either side, idle or lent out): its place goes to the first waiter.
    private func closed(_ channel: any Channel, endpoint: UpstreamEndpoint) {
        guard endpoints[endpoint] != nil else { return }
        endpoints[endpoint]!.open -= 1
        endpoints[endpoint]!.idle.removeAll { $0.channel === channel }
        serveWaiter(endpoint)
    }

    private func connectFailed(_ endpoint: UpstreamEndpoint) {
        guard var state = endpoints[endpoint] else { return }
        state.open -= 1
        endpoints[endpoint] = state
        serveWaiter(endpoint)
    }

    private func serveWaiter(_ endpoint: UpstreamEndpoint) {
        guard !isShutDown, var state = endpoints[endpoint], state.open < limits.maximumConnections, let waiter = state.waiting.popFirst() else {
            return
        }
        state.open += 1
        endpoints[endpoint] = state
        connect(endpoint).cascade(to: waiter)
    }
}
