import AsyncHTTPClient
import Foundation
import GatehouseStorage
import Logging
import ServiceLifecycle

/// Sends each finished registration to the configured provisioning webhook, retrying with growing pauses.
///
/// The registrations table is the queue: a registration is written first and provisioned by the next poll, so a webhook
/// that is down delays provisioning and never loses a registration. Registrations that still fail after
/// `maximumAttempts` are logged as errors and counted in the funnel report.
public struct ProvisioningWebhook: Service {
    let store: any RegistrationStore
    let http: HTTPClient
    let configuration: ProvisioningConfiguration
    let endpoint: HTTPEndpointConfiguration
    let logger: Logger

    public init(
        store: any RegistrationStore, http: HTTPClient, configuration: ProvisioningConfiguration, endpoint: HTTPEndpointConfiguration,
        logger: Logger
    ) {
        self.store = store
        self.http = http
        self.configuration = configuration
        self.endpoint = endpoint
        self.logger = logger
    }

    public func run() async throws {
        // Graceful shutdown cancels the sleep; that is the normal way out.
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                await deliverDue()
                try await Task.sleep(for: .milliseconds(Int64(configuration.pollSeconds * 1000)))
            }
        }
    }

    /// One pass over the registrations that are due.
    public func deliverDue(now: Date = Date()) async {
        do {
            for pending in try await store.dueForProvisioning(now: now, maximumAttempts: configuration.maximumAttempts, limit: 50) {
                await deliver(pending, now: now)
            }
        } catch {
            logger.error("provisioning queue unreadable", metadata: ["error": .string("\(error)")])
        }
    }

    func deliver(_ pending: PendingProvisioning, now: Date) async {
        let registration = pending.registration
        let body: [String: Any] = [
            "sub": registration.sub, "username": registration.username, "phone_number": registration.phoneNumber.e164,
            "display_name": registration.displayName, "discoverability": registration.discoverability.rawValue,
            "registered_at": ISO8601DateFormatter().string(from: registration.registeredAt),
        ]
        let failure: String
        do {
            let status = try await endpoint.post(json: body, using: http)
            if (200..<300).contains(status) {
                try await store.markProvisioned(sub: registration.sub, at: Date())
                logger.info("member provisioned", metadata: ["sub": .string(registration.sub)])
                return
            }
            failure = "HTTP \(status)"
        } catch {
            failure = String(describing: error)
        }
        let attempts = pending.attempts + 1
        let pause = min(configuration.retryBaseSeconds * pow(2, Double(attempts - 1)), 3600)
        let gaveUp = attempts >= configuration.maximumAttempts
        logger.log(
            level: gaveUp ? .error : .warning, gaveUp ? "provisioning failed; giving up" : "provisioning failed; will retry",
            metadata: ["sub": .string(registration.sub), "attempt": "\(attempts)", "error": .string(failure)])
        do {
            try await store.markProvisioningFailed(
                sub: registration.sub, attempts: attempts, nextAttemptAt: now.addingTimeInterval(pause), error: failure)
        } catch {
            logger.error("provisioning failure not recorded", metadata: ["error": .string("\(error)")])
        }
    }
}
