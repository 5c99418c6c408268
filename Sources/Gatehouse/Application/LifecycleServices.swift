import AsyncHTTPClient
import Foundation
import GatehouseCore
import GatehouseDataPlane
import GatehouseStorage
import Logging
import NIOConcurrencyHelpers
import ServiceLifecycle
import UnixSignals

/// Keeps the shared HTTP clients and the data plane's upstream connections until graceful shutdown, then shuts them
/// down.
struct HTTPClientService: Service {
    let clients: [HTTPClient]
    let upstreamClients: UpstreamClients
    let upstreamPools: UpstreamPools

    func run() async throws {
        try? await gracefulShutdown()
        await upstreamPools.shutDown()
        await upstreamClients.shutdown()
        for client in clients { try await client.shutdown() }
    }
}

/// The first to hear of a graceful shutdown (it runs after the application in the outer service group, which signals
/// in reverse order and waits for each service before the next): marks the gateway as draining, keeps serving for
/// the drain period, and only then lets the server's own shutdown begin.
struct DrainingService: Service {
    let draining: Draining
    let drain: Duration
    let grace: Duration
    let logger: Logger

    func run() async throws {
        try? await gracefulShutdown()
        draining.begin()
        if drain > .zero {
            // Readiness fails and every answer says `Connection: close`, while new connections are still taken: a
            // request a balancer sent just before it saw the failure is answered, not lost.
            logger.notice("draining: not ready; serving on with Connection: close", metadata: ["drain_seconds": "\(drain.components.seconds)"])
            try? await Task.sleep(for: drain)
        }
        // The relays close their WebSockets as "going away" first (for a moment at most), before the server's
        // own shutdown would close them as plainly finished.
        draining.closeRelays()
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(2)
        while draining.openRelays > 0, clock.now < deadline { try? await Task.sleep(for: .milliseconds(10)) }
        logger.notice(
            "shutdown started: no new connections; requests in flight may finish", metadata: ["grace_seconds": "\(grace.components.seconds)"])
    }
}

/// Removes ended sessions (their jars and app grants go with them), abandoned sign-ins, unused app handoffs,
/// logout tokens that can no longer be replayed, rate-limit keys whose allowance is whole again every few minutes,
/// forms kept for a sign-in that never came, and what is remembered of members not seen for a year.
struct ExpirySweeper: Service {
    let sessions: any SessionStore
    let attempts: any LoginAttemptStore
    let handoffs: any HostMountStore
    let flows: any RegistrationFlowStore
    let logoutTokens: any LogoutTokenStore
    let rateLimits: any RateLimitStore
    let keptForms: any KeptFormStore
    let audit: any AuditStore
    let members: any MemberStore
    /// How long the audit trail's records are kept (`audit.retention_days`).
    let auditRetention: TimeInterval
    let rules: VerificationRules
    let configuration: SessionConfiguration
    let logger: Logger
    var interval: Duration = .seconds(300)

    func run() async throws {
        await repeatUntilShutdown(every: interval, startingNow: false) { await sweep() }
    }

    func sweep() async {
        let now = Date()
        do {
            let sessionsRemoved = try await sessions.deleteExpired(
                now: now, idleCutoff: now.addingTimeInterval(-TimeInterval(configuration.idleTimeoutSeconds))
            ).count
            let attemptsRemoved = try await attempts.deleteOlder(than: now.addingTimeInterval(-LoginAttempt.lifetime))
            let handoffsRemoved = try await handoffs.deleteExpiredHandoffs(now: now)
            // Stale flows would start over anyway; send records only matter inside the rate window.
            let registrationRemoved = try await flows.deleteStale(
                flowsBefore: now.addingTimeInterval(-RegistrationFlow.resumeWindow), sendsBefore: now.addingTimeInterval(-rules.rateWindow))
            let logoutTokensRemoved = try await logoutTokens.deleteExpired(now: now)
            let rateLimitKeysRemoved = try await rateLimits.deleteExpired(now: now)
            let keptFormsRemoved = try await keptForms.deleteExpired(now: now)
            let auditRemoved = try await audit.removeRecords(before: now.addingTimeInterval(-auditRetention))
            let membersForgotten = try await members.forgetUnseen(before: now.addingTimeInterval(-RecentApps.lifetime))
            if sessionsRemoved + attemptsRemoved + handoffsRemoved + registrationRemoved + logoutTokensRemoved + rateLimitKeysRemoved
                + keptFormsRemoved + auditRemoved + membersForgotten > 0
            {
                logger.info(
                    "swept",
                    metadata: [
                        "sessions": "\(sessionsRemoved)", "login_attempts": "\(attemptsRemoved)", "app_handoffs": "\(handoffsRemoved)",
                        "registration_rows": "\(registrationRemoved)", "logout_tokens": "\(logoutTokensRemoved)",
                        "rate_limit_keys": "\(rateLimitKeysRemoved)", "kept_forms": "\(keptFormsRemoved)", "audit_records": "\(auditRemoved)",
                        "members": "\(membersForgotten)",
                    ])
            }
        } catch {
            logger.error("expiry sweep failed", metadata: ["error": .string("\(error)")])
        }
    }
}

/// Writes the jar changes the data plane made in the state cache to the store, `interval` after the first of them
/// (so that a burst goes in one pass), each session's waiting changes in one write, and again every `interval` while
/// some wait; at shutdown whatever still waits. While none waits it sleeps (`StateCache.jarChangesWaiting` wakes
/// it): a gateway at rest, or serving pages that change no jar, wakes no thread for it. While the store is unavailable the changes stay
/// waiting and are written once it answers (a cookie an app set during a database outage is not lost; meanwhile the
/// data plane leaves pages to the application's path past `ProxyDataPlane.pendingJarLimit`). A change the store
/// refuses (its session was deleted with its jar) is dropped and logged. What a crash loses: the changes still
/// waiting.
struct JarWriteBehind: Service {
    let jars: SharedCookieJars
    let cache: StateCache
    let metrics: GatewayMetrics
    let logger: Logger
    var interval: Duration = .milliseconds(50)

    func run() async throws {
        try? await cancelWhenGracefulShutdown {
            for await _ in cache.jarChangesWaiting {
                repeat {
                    try await Task.sleep(for: interval)
                    await flush()
                } while cache.pendingJarChanges > 0
            }
        }
        await flush()
    }

    func flush() async {
        for (sessionID, changes) in cache.pendingJarWrites() {
            do {
                try await jars.apply(changes, sessionID: sessionID)
            } catch let error as StorageError where error.isUnavailable {
                metrics.counter("gatehouse_jar_writes_postponed_total").increment()
                logger.debug("cookie jar changes wait for the store", metadata: ["changes": "\(changes.count)", "error": "\(error)"])
                continue  // still pending: the next flush tries again
            } catch {
                metrics.counter("gatehouse_jar_writes_failed_total").increment()
                logger.warning("cookie jar changes could not be stored", metadata: ["changes": "\(changes.count)", "error": "\(error)"])
            }
            cache.jarWritten(sessionID, count: changes.count)
        }
    }
}

/// Keeps the store's figures in the metrics: live sessions and the provisioning backlog, read every `interval` (a
/// count each, on any number of replicas the same figure, as it comes from the shared store).
struct StoreGauges: Service {
    /// The store's preparation, awaited before the first read (services start beside the server's own wait for it).
    let prepared: @Sendable () async throws -> Void
    let sessions: any SessionStore
    let registrations: any RegistrationStore
    let session: SessionConfiguration
    let maximumProvisioningAttempts: Int
    let metrics: GatewayMetrics
    let logger: Logger
    var interval: Duration = .seconds(30)

    func run() async throws {
        await repeatUntilShutdown(every: interval, startingNow: true) { await read() }
    }

    func read() async {
        let now = Date()
        do {
            try await prepared()
            let live = try await sessions.countActive(now: now, idleCutoff: now.addingTimeInterval(-TimeInterval(session.idleTimeoutSeconds)))
            let backlog = try await registrations.provisioningBacklog(maximumAttempts: maximumProvisioningAttempts)
            metrics.storeGauges(activeSessions: live, provisioningWaiting: backlog.waiting, provisioningFailed: backlog.failed)
        } catch {
            // A read cut short by the shutdown is no failure of the store.
            if Task.isCancelled { return }
            metrics.counter("gatehouse_store_errors_total", [("operation", "gauges")]).increment()
            logger.warning("store figures unreadable", metadata: ["error": .string("\(error)")])
        }
    }
}

/// Reads the assertion signing keys from the store every minute: the next key made when due (by whichever replica
/// comes first), retired keys dropped, the published set renewed. A store that does not answer leaves the keys as
/// they were.
struct AssertionKeyRefresher: Service {
    let ring: AssertionKeyRing
    let metrics: GatewayMetrics
    let logger: Logger

    func run() async throws {
        let (ring, metrics, logger) = (ring, metrics, logger)
        await repeatUntilShutdown(every: .seconds(60), startingNow: false) {
            do {
                try await ring.refresh()
            } catch {
                if Task.isCancelled { return }
                metrics.counter("gatehouse_store_errors_total", [("operation", "assertion_keys")]).increment()
                logger.warning("assertion keys unreadable", metadata: ["error": .string("\(error)")])
            }
        }
    }
}

/// Runs `work` every `interval` (the first time at once when `startingNow`) until a graceful shutdown, which cancels
/// the pause between runs: the normal way out, not a failure.
func repeatUntilShutdown(every interval: Duration, startingNow: Bool, _ work: @escaping @Sendable () async -> Void) async {
    try? await cancelWhenGracefulShutdown {
        if startingNow { await work() }
        while !Task.isCancelled {
            try await Task.sleep(for: interval)
            await work()
        }
    }
}

/// Runs `work` each time `state` (looked at every `interval`) differs from the last look, until a graceful shutdown:
/// a file renewed or edited in place, or a link swapped by a secret mount.
func whenChanged<State: Equatable & Sendable>(
    every interval: Duration, _ state: @escaping @Sendable () -> State, _ work: @escaping @Sendable () async -> Void
) async {
    let seen = NIOLockedValueBox(state())
    await repeatUntilShutdown(every: interval, startingNow: false) {
        let now = state()
        guard seen.withLockedValue({ seen in defer { seen = now }; return seen != now }) else { return }
        await work()
    }
}

/// `SIGHUP` reads the configuration again (and the members' listener's certificate and key); so does a change of the
/// configuration file (looked at every `interval`). `SIGHUP` never ends the gateway: it is trapped from the start of
/// the service group, with or without TLS. Another replica's change to the console's apps applies them here too.
struct ConfigurationWatcher: Service {
    let reloads: ConfigurationApplier
    let file: String?
    let tls: ListenerTLS?
    var interval: Duration = .seconds(2)

    func run() async throws {
        let signals = await UnixSignalsSequence(trapping: .sighup)
        let (reloads, tls, file, interval) = (reloads, tls, file, interval)
        await withDiscardingTaskGroup { group in
            group.addTask {
                for await _ in signals.cancelOnGracefulShutdown() {
                    tls?.reload()
                    await reloads.reload()
                }
            }
            if let file {
                group.addTask { await whenChanged(every: interval, { FileState(path: file) }) { await reloads.reload() } }
            }
            let catalogChanges = reloads.running.foundation.storedCatalog.changes.signals
            group.addTask {
                for await _ in catalogChanges.cancelOnGracefulShutdown() { await reloads.reloadCatalog() }
            }
            try? await gracefulShutdown()
            group.cancelAll()
        }
    }
}

/// Reads the members' listener's certificate and key again when their files change (looked at every few seconds:
/// renewals by an ACME client or a secret mount need no signal); `SIGHUP` does too (`ConfigurationWatcher`).
struct TLSReloader: Service {
    let tls: ListenerTLS
    var interval: Duration = .seconds(5)

    func run() async throws {
        let tls = tls
        await whenChanged(every: interval, tls.filesState) { tls.reload() }
    }
}
