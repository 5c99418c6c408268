import GatehouseCore
import HummingbirdCore
import Logging
import NIOConcurrencyHelpers
import NIOCore

#if canImport(Glibc)
    import Glibc
#endif

/// How many connections the members' listener holds: in all (below the process's open-file limit, so that the
/// gateway keeps descriptors for its apps, its database and its files) and per client address (so that one client
/// that opens connections and sends nothing cannot keep everyone else out until the idle timeout frees them). A
/// connection over either limit is closed as soon as it is accepted, before a byte is read, and counted in
/// `gatehouse_connections_refused_total{reason}`.
///
/// An address is an IPv4 address or an IPv6 /64 (one subscriber's share, any address of which a client can use).
/// A trusted proxy's connections count only in the total: a load balancer carries many members.
final class ConnectionAdmission: Sendable {
    enum Refusal: String, CaseIterable, Error {
        /// The listener holds its maximum.
        case total
        /// This client's address holds its maximum.
        case address
    }

    let maximum: Int
    let maximumPerAddress: Int
    private let resolver: ClientAddressResolver
    private let state = NIOLockedValueBox(State())

    private struct State {
        var open = 0
        var byAddress: [String: Int] = [:]
        var refused: [Refusal: Int] = [:]
    }

    init(maximum: Int, maximumPerAddress: Int, trustedProxies: ClientAddressResolver) {
        self.maximum = maximum
        self.maximumPerAddress = maximumPerAddress
        self.resolver = trustedProxies
    }

    /// The listener's limits from the configuration; without `listen.max_connections`, three quarters of the open-file
    /// limit, which is first raised to its hard limit (as nginx's `worker_rlimit_nofile` would be set by hand).
    convenience init(_ listen: ListenConfiguration) {
        let maximum = listen.maximumConnections ?? max(16, Self.raiseOpenFileLimit() / 4 * 3)
        self.init(
            maximum: maximum, maximumPerAddress: listen.maximumConnectionsPerAddress,
            trustedProxies: ClientAddressResolver(trustedProxies: listen.trustedProxies))
    }

    /// Admits a connection from `peer` (its address, nil when it has none) or says why not. An admitted connection's
    /// key is given back with `release` when it closes.
    func admit(peer: String?) -> Result<String?, Refusal> {
        let key = peer.flatMap(IPAddress.init).flatMap { resolver.isTrusted($0) ? nil : $0.rateLimitKey }
        return state.withLockedValue { state in
            if state.open >= maximum {
                state.refused[.total, default: 0] += 1
                return .failure(.total)
            }
            if let key {
                guard state.byAddress[key, default: 0] < maximumPerAddress else {
                    state.refused[.address, default: 0] += 1
                    return .failure(.address)
                }
                state.byAddress[key, default: 0] += 1
            }
            state.open += 1
            return .success(key)
        }
    }

    func release(_ key: String?) {
        state.withLockedValue { state in
            state.open -= 1
            guard let key, let count = state.byAddress[key] else { return }
            state.byAddress[key] = count > 1 ? count - 1 : nil
        }
    }

    var open: Int { state.withLockedValue { $0.open } }

    func refused(_ reason: Refusal) -> Int { state.withLockedValue { $0.refused[reason, default: 0] } }

    /// The soft open-file limit raised to the hard one; the limit now in force.
    private static func raiseOpenFileLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        return Int(min(limit.rlim_cur, 1 << 20))
    }
}

/// A server child channel that is set up only when `ConnectionAdmission` admits its peer, and gives its place back
/// when it closes; refused, it is closed before anything is read.
struct AdmittedChannel<Inner: ServerChildChannel>: ServerChildChannel {
    typealias Value = Inner.Value

    let inner: Inner
    let admission: ConnectionAdmission

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        switch admission.admit(peer: channel.remoteAddress?.ipAddress) {
        case .failure(let reason):
            logger.debug(
                "Connection refused at the listener's limit",
                metadata: ["reason": .string(reason.rawValue), "peer": .string(channel.remoteAddress?.ipAddress ?? "-")])
            return channel.close().flatMapThrowing { throw reason }
        case .success(let key):
            channel.closeFuture.whenComplete { [admission] _ in admission.release(key) }
            return inner.setup(channel: channel, logger: logger)
        }
    }

    func handle(value: Value, logger: Logger) async {
        await inner.handle(value: value, logger: logger)
    }
}
