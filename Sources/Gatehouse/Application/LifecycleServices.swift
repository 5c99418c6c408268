import AsyncHTTPClient
import Foundation
import Logging
import ServiceLifecycle

/// Keeps the shared HTTP clients until graceful shutdown, then shuts them down.
struct HTTPClientService: Service {
    let client: HTTPClient
    let upstreamClients: UpstreamClients

    func run() async throws {
        try? await gracefulShutdown()
        await upstreamClients.shutdown()
        try await client.shutdown()
    }
}

/// Closes the database after the server has stopped taking requests.
struct DatabaseService: Service {
    let database: SQLiteDatabase

    func run() async throws {
        try? await gracefulShutdown()
        try await database.close()
    }
}

/// Removes ended sessions (their jars and app grants go with them), abandoned sign-ins, unused app handoffs and
/// logout tokens that can no longer be replayed every few minutes.
struct ExpirySweeper: Service {
    let sessions: any SessionStore
    let attempts: any LoginAttemptStore
    let handoffs: any HostMountStore
    let flows: any RegistrationFlowStore
    let logoutTokens: any LogoutTokenStore
    let rules: VerificationRules
    let configuration: SessionConfiguration
    let logger: Logger
    var interval: Duration = .seconds(300)

    func run() async throws {
        // Graceful shutdown cancels the sleep; that is the normal way out, not a failure.
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try await Task.sleep(for: interval)
                await sweep()
            }
        }
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
            if sessionsRemoved + attemptsRemoved + handoffsRemoved + registrationRemoved + logoutTokensRemoved > 0 {
                logger.info(
                    "swept",
                    metadata: [
                        "sessions": "\(sessionsRemoved)", "login_attempts": "\(attemptsRemoved)", "app_handoffs": "\(handoffsRemoved)",
                        "registration_rows": "\(registrationRemoved)", "logout_tokens": "\(logoutTokensRemoved)",
                    ])
            }
        } catch {
            logger.error("expiry sweep failed", metadata: ["error": .string("\(error)")])
        }
    }
}
