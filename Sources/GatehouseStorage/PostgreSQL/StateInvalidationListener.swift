import Foundation
import GatehouseCore
import Logging
import NIOConcurrencyHelpers
import PostgresNIO
import ServiceLifecycle

/// Keeps a replica's `StateCache` honest on PostgreSQL: one pooled connection `LISTEN`s for the notifications the
/// session and jar triggers send at every commit, and evicts what they name; the app catalog's trigger is passed on
/// (`CatalogChanges`).
///
/// The bound: a change reaches the other replicas as a notification within milliseconds of its commit. If the
/// listening connection fails or merely falls silent, the cache is no longer trusted: a heartbeat every 250 ms
/// must come back within 500 ms (PostgreSQL sends pending notifications before a query's answer, so a heartbeat
/// that returns proves nothing was held back), or the cache is emptied and bypassed until the connection listens
/// again. So no replica serves a changed or ended session later than 750 ms after the change — within 1 second.
struct StateInvalidationListener: Service {
    static let channel = "gatehouse_state"

    let database: PostgresDatabase
    let cache: StateCache
    /// Told of changes to the stored app catalog, and each time listening (re)starts.
    let catalogChanges: CatalogChanges
    let logger: Logger
    var heartbeatInterval: Duration = .milliseconds(250)
    var heartbeatTimeout: Duration = .milliseconds(500)

    enum Failure: Error {
        case heartbeatLate
        case notificationsEnded
    }

    func run() async throws {
        // Whatever ends the listening, nothing is served from memory without it.
        defer { cache.reset(trusted: false) }
        try? await cancelWhenGracefulShutdown {
            var retryDelay = Self.firstRetryDelay
            while !Task.isCancelled {
                let started = ContinuousClock.now
                do {
                    try await listen()
                } catch {
                    if Task.isCancelled { return }  // the gateway is stopping
                    // A connection that listened a while is a new outage: said once, retried at once.
                    if ContinuousClock.now - started > .seconds(5) { retryDelay = Self.firstRetryDelay }
                    if retryDelay == Self.firstRetryDelay {
                        let reason = (error as? PSQLError).map { "PostgreSQL \($0.code)" } ?? "\(error)"
                        logger.warning("state cache bypassed: invalidations interrupted", metadata: ["error": .string(reason)])
                    }
                }
                cache.reset(trusted: false)
                try await Task.sleep(for: retryDelay)
                retryDelay = min(retryDelay * 2, .seconds(2))
            }
        }
    }

    static let firstRetryDelay: Duration = .milliseconds(100)
    /// Recognisable in `pg_stat_activity`.
    static let heartbeat: PostgresQuery = "SELECT 'gatehouse heartbeat'"

    /// Listens until the connection fails or a heartbeat is late; the cache is trusted meanwhile. A connection that
    /// does not even confirm the `LISTEN` in time is given up the same way.
    ///
    /// The first failure ends the wait at once, without waiting for postgres-nio's `listen` to return: after the
    /// connection is closed under it, its closing `UNLISTEN` may never be answered, and a task group waiting for it
    /// held the listener, and the gateway's shutdown behind it, for ever.
    private func listen() async throws {
        try await database.client.withConnection { connection in
            let ended = FirstOutcome<Void>()
            let listening = NIOLockedValueBox(false)
            let listener = Task {
                do {
                    try await connection.listen(on: Self.channel) { notifications in
                        // Listening from here on: whatever changes now is heard, and whatever changed before is not
                        // in the emptied cache.
                        listening.withLockedValue { $0 = true }
                        cache.reset(trusted: true)
                        catalogChanges.signal()
                        logger.info("state cache trusted: listening for invalidations")
                        // Untrusted the moment listening ends, whatever the rest of the unwinding waits for.
                        defer { cache.reset(trusted: false) }
                        let heard = Task {
                            do {
                                for try await notification in notifications { apply(notification.payload) }
                                ended.finish(.failure(Failure.notificationsEnded))
                            } catch { ended.finish(.failure(error)) }
                        }
                        let heartbeat = Task {
                            do { try await heartbeats(on: connection) } catch { ended.finish(.failure(error)) }
                        }
                        defer { heard.cancel(); heartbeat.cancel() }
                        try await ended.value()
                    }
                    ended.finish(.failure(Failure.notificationsEnded))
                } catch { ended.finish(.failure(error)) }
            }
            let watchdog = Task {
                try await Task.sleep(for: heartbeatTimeout)
                guard listening.withLockedValue({ $0 }) else {
                    try? await connection.close()
                    return ended.finish(.failure(Failure.heartbeatLate))
                }
            }
            defer { listener.cancel(); watchdog.cancel() }
            do { try await ended.value() } catch {
                // Never handed back to the pool still listening.
                try? await connection.close()
                throw error
            }
        }
    }

    private func heartbeats(on connection: PostgresConnection) async throws {
        while true {
            try await Task.sleep(for: heartbeatInterval)
            _ = try await withTimeout(heartbeatTimeout, { try await PostgresDatabase.collect(connection.query(Self.heartbeat, logger: logger)) }) {
                // Untrusted at once; closing the connection ends the query waiting on it (and the listening).
                cache.reset(trusted: false)
                try? await connection.close()
                return Failure.heartbeatLate
            }
        }
    }

    func apply(_ payload: String) {
        if payload == "c" { return catalogChanges.signal() }
        guard let kind = payload.first else { return }
        let sessionID = String(payload.dropFirst())
        switch kind {
        case "s": cache.invalidate(sessionID: sessionID)
        case "j": cache.invalidate(jarOf: sessionID)
        default: logger.warning("unknown state notification", metadata: ["payload": .string(payload)])
        }
    }
}
