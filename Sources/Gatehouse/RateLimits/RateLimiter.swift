import Foundation
import GatehouseCore
import GatehouseStorage

/// The gateway's rate limits (product §9): sign-in starts and callbacks per client address, the username check per
/// member. Each counts only its own key, so no address or member can use up another's allowance.
public struct RateLimiter: Sendable {
    public enum Limit: String, Sendable, CaseIterable {
        case signInStart = "sign_in_start"
        case callback
        case usernameCheck = "username_check"
    }

    let store: any RateLimitStore
    let configuration: RateLimitsConfiguration
    let metrics: GatewayMetrics

    public init(store: any RateLimitStore, configuration: RateLimitsConfiguration, metrics: GatewayMetrics) {
        self.store = store
        self.configuration = configuration
        self.metrics = metrics
    }

    /// Throws `RateLimited` when `limit` is used up for `key` (a client address or a member's `sub`).
    func admit(_ limit: Limit, key: String, now: Date = Date()) async throws {
        let rule = configuration.rule(limit)
        guard case .limited(let wait) = try await store.admit(key: "\(limit.rawValue):\(key)", rule: rule, now: now) else { return }
        metrics.counter("gatehouse_rate_limited_total", [("limit", limit.rawValue)]).increment()
        throw RateLimited(limit: limit, retryAfterSeconds: max(1, Int(wait.rounded(.up))))
    }

    /// A client address as the key it counts against (an IPv6 address by its /64); `unknown` without one.
    func admit(_ limit: Limit, client: String?) async throws {
        try await admit(limit, key: client.flatMap { IPAddress($0)?.rateLimitKey } ?? client ?? "unknown")
    }
}

extension RateLimitsConfiguration {
    func rule(_ limit: RateLimiter.Limit) -> RateLimitRule {
        switch limit {
        case .signInStart: signInStarts
        case .callback: callbacks
        case .usernameCheck: usernameChecks
        }
    }
}
