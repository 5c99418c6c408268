import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

@testable import GatehouseDataPlane

#if canImport(Glibc)
    import Glibc
#endif

/// The per-loop upstream pool against a real listening socket that counts the connections it accepts.
@Suite struct UpstreamPoolTests {
    /// Accepts connections, counts them, and can close every one it holds (an upstream dropping kept-alive
    /// connections).
    final class Upstream: Sendable {
        let channel: any Channel
        private let accepted = NIOLockedValueBox([any Channel]())

        init() async throws {
            let accepted = self.accepted
            channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .childChannelInitializer { child in
                    accepted.withLockedValue { $0.append(child) }
                    return child.eventLoop.makeSucceededVoidFuture()
                }
                .bind(host: "127.0.0.1", port: 0).get()
        }

        var connections: Int { accepted.withLockedValue { $0.count } }

        /// How many connections it accepted, once that number has settled on `expected` or after a second (the server
        /// side learns of a connection a moment after the client).
        func connections(settlingOn expected: Int) async throws -> Int {
            for _ in 0..<100 where connections != expected { try await Task.sleep(for: .milliseconds(10)) }
            return connections
        }
        var endpoint: UpstreamEndpoint { UpstreamEndpoint(address: channel.localAddress!, host: "app.test") }

        func dropAll() async throws {
            for child in accepted.withLockedValue({ $0 }) { try? await child.close() }
        }

        func close() async throws { try await channel.close() }
    }

    /// A pool on one loop, touched only there.
    struct Pool: Sendable {
        let bound: NIOLoopBound<UpstreamPool>
        var loop: any EventLoop { bound.eventLoop }

        init(_ limits: UpstreamPool.Limits) async throws {
            let loop = MultiThreadedEventLoopGroup.singleton.next()
            // Made on its loop: a loop-bound value may only be made there.
            bound = try await loop.submit {
                NIOLoopBound(UpstreamPool(eventLoop: loop, limits: limits) { $0.eventLoop.makeSucceededVoidFuture() }, eventLoop: loop)
            }.get()
        }

        func lease(_ endpoint: UpstreamEndpoint) -> EventLoopFuture<UpstreamPool.Lease> {
            loop.flatSubmit { bound.value.lease(endpoint) }
        }

        func release(_ lease: UpstreamPool.Lease, reusable: Bool = true) async throws {
            try await loop.submit { bound.value.release(lease, reusable: reusable) }.get()
        }

        func count(_ endpoint: UpstreamEndpoint) async throws -> (open: Int, idle: Int) {
            try await loop.submit { bound.value.count(endpoint) }.get()
        }

        /// Releases and counts in one turn of the loop: no timer of the pool can run between the two.
        func releaseAndCount(_ lease: UpstreamPool.Lease) async throws -> (open: Int, idle: Int) {
            try await loop.submit {
                bound.value.release(lease, reusable: true)
                return bound.value.count(lease.endpoint)
            }.get()
        }
    }

    @Test func aReleasedConnectionCarriesTheNextExchange() async throws {
        let upstream = try await Upstream()
        let pool = try await Pool(.init(maximumConnections: 4))
        let first = try await pool.lease(upstream.endpoint).get()
        #expect(!first.isReused)
        try await pool.release(first)
        let second = try await pool.lease(upstream.endpoint).get()
        #expect(second.isReused && second.channel === first.channel)
        #expect(try await upstream.connections(settlingOn: 1) == 1)
        try await pool.release(second, reusable: false)
        try await second.channel.closeFuture.get()
        #expect(try await pool.count(upstream.endpoint) == (0, 0))
        try await upstream.close()
    }

    @Test func beyondTheLimitALeaseWaitsForTheNextRelease() async throws {
        let upstream = try await Upstream()
        let pool = try await Pool(.init(maximumConnections: 2))
        let a = try await pool.lease(upstream.endpoint).get()
        let b = try await pool.lease(upstream.endpoint).get()
        let third = pool.lease(upstream.endpoint)
        let thirdLent = NIOLockedValueBox(false)
        third.whenComplete { _ in thirdLent.withLockedValue { $0 = true } }
        try await Task.sleep(for: .milliseconds(100))
        #expect(try await upstream.connections(settlingOn: 2) == 2)
        #expect(!thirdLent.withLockedValue { $0 }, "a third connection was lent beyond the limit of two")
        try await pool.release(a)
        let c = try await third.get()
        #expect(c.isReused && c.channel === a.channel)
        // A connection that closes instead makes room for a new one.
        let fourth = pool.lease(upstream.endpoint)
        try await pool.release(b, reusable: false)
        let d = try await fourth.get()
        #expect(!d.isReused)
        #expect(try await upstream.connections(settlingOn: 3) == 3)
        try await upstream.close()
    }

    @Test func idleConnectionsCloseAfterTheirTimeout() async throws {
        let upstream = try await Upstream()
        let pool = try await Pool(.init(maximumConnections: 4, idleTimeout: .seconds(1)))
        let first = try await pool.lease(upstream.endpoint).get()
        // Counted in the release's own turn of the loop: a loaded machine can take longer than the idle timeout
        // between two turns.
        #expect(try await pool.releaseAndCount(first) == (1, 1))
        try await first.channel.closeFuture.get()
        #expect(try await pool.count(upstream.endpoint) == (0, 0))
        let next = try await pool.lease(upstream.endpoint).get()
        #expect(!next.isReused)
        #expect(try await upstream.connections(settlingOn: 2) == 2)
        try await upstream.close()
    }

    @Test func aConnectionTheUpstreamClosedWhileIdleIsNeverLent() async throws {
        let upstream = try await Upstream()
        let pool = try await Pool(.init(maximumConnections: 4))
        let first = try await pool.lease(upstream.endpoint).get()
        try await pool.release(first)
        try await upstream.dropAll()
        try await first.channel.closeFuture.get()
        let next = try await pool.lease(upstream.endpoint).get()
        #expect(!next.isReused && next.channel !== first.channel && next.channel.isActive)
        try await upstream.close()
    }

    @Test func aRefusedConnectionFailsAtOnceAndLeavesNoPlaceTaken() async throws {
        // A port held by a socket that is bound but does not listen: refused, and no other test can take it meanwhile
        // (a port merely closed again may be bound by a test running beside this one).
        let held = try Self.boundNotListening()
        defer { close(held.descriptor) }
        let endpoint = UpstreamEndpoint(address: try SocketAddress(ipAddress: "127.0.0.1", port: held.port), host: "app.test")
        let pool = try await Pool(.init(maximumConnections: 1, connectTimeout: .seconds(30)))
        let started = ContinuousClock.now
        await #expect {
            try await pool.lease(endpoint).get()
        } throws: { error in
            (error as? NIOConnectionError)?.connectionErrors.contains { ($0.error as? IOError)?.errnoCode == ECONNREFUSED } == true
                || (error as? IOError)?.errnoCode == ECONNREFUSED
        }
        // Refused, not timed out: far sooner than the connect timeout.
        #expect(ContinuousClock.now - started < .seconds(15))
        #expect(try await pool.count(endpoint) == (0, 0))
    }

    /// A TCP socket on a loopback port, bound but not listening: connections to it are refused.
    static func boundNotListening() throws -> (descriptor: Int32, port: Int) {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(descriptor, address, length) == 0 && getsockname(descriptor, address, &length) == 0
            }
        }
        guard descriptor >= 0, bound else { throw IOError(errnoCode: errno, reason: "bind") }
        return (descriptor, Int(UInt16(bigEndian: address.sin_port)))
    }

    @Test func shuttingDownRefusesWhatWaitsAndClosesWhatIsIdle() async throws {
        let upstream = try await Upstream()
        let pool = try await Pool(.init(maximumConnections: 1))
        let lent = try await pool.lease(upstream.endpoint).get()
        let waiting = pool.lease(upstream.endpoint)
        try await pool.loop.submit { pool.bound.value.shutDown() }.get()
        await #expect(throws: UpstreamPool.Failure.shutDown) { try await waiting.get() }
        try await pool.release(lent)  // closed, not kept
        try await lent.channel.closeFuture.get()
        await #expect(throws: UpstreamPool.Failure.shutDown) { try await pool.lease(upstream.endpoint).get() }
        try await upstream.close()
    }
}
