import Foundation
import HTTPTypes
import Hummingbird
import NIOConcurrencyHelpers

/// At most `limit` requests in any `periodSeconds`, let through again one at a time as the period slides on (the
/// generic cell rate algorithm: each key keeps one number, the time its allowance is used up to).
public struct RateLimitRule: Sendable, Equatable {
    public var limit: Int
    public var periodSeconds: Int

    public init(limit: Int, periodSeconds: Int) {
        self.limit = limit
        self.periodSeconds = periodSeconds
    }

    /// The time between two requests at the sustained rate.
    var interval: Double { Double(periodSeconds) / Double(limit) }

    /// The decision for one more request at `now` when the key's allowance is used up to `usedUntil` (seconds since
    /// 1970; `nil` for a key without requests): the new `usedUntil` when it is let through, else the wait.
    func decide(usedUntil: Double?, now: Double) -> RateLimitDecision {
        let next = max(usedUntil ?? now, now) + interval
        let earliest = next - Double(periodSeconds)
        return earliest <= now ? .allowed(usedUntil: next) : .limited(retryAfter: earliest - now)
    }
}

public enum RateLimitDecision: Sendable, Equatable {
    case allowed(usedUntil: Double)
    /// Seconds until the next request would be let through.
    case limited(retryAfter: Double)
}

/// Where each key's allowance is kept: in memory for one gateway, in PostgreSQL for replicas that share limits.
public protocol RateLimitStore: Sendable {
    /// Counts one request against `key` if `rule` lets it through at `now`, atomically.
    func admit(key: String, rule: RateLimitRule, now: Date) async throws -> RateLimitDecision
    /// Forgets keys whose allowance is whole again; returns how many.
    func deleteExpired(now: Date) async throws -> Int
}

/// One gateway's limits (the SQLite store serves one gateway): a dictionary of keys, swept like the other stores.
public final class MemoryRateLimitStore: RateLimitStore {
    private let usedUntil = NIOLockedValueBox([String: Double]())

    public init() {}

    public func admit(key: String, rule: RateLimitRule, now: Date) async throws -> RateLimitDecision {
        let now = now.timeIntervalSince1970
        return usedUntil.withLockedValue { keys in
            let decision = rule.decide(usedUntil: keys[key], now: now)
            if case .allowed(let next) = decision { keys[key] = next }
            return decision
        }
    }

    public func deleteExpired(now: Date) async throws -> Int {
        let now = now.timeIntervalSince1970
        return usedUntil.withLockedValue { keys in
            let before = keys.count
            keys = keys.filter { $0.value > now }
            return before - keys.count
        }
    }
}

/// A request refused by a rate limit: `429` with `Retry-After`, as a page or JSON.
public struct RateLimited: PresentableError, Equatable {
    public let limit: RateLimiter.Limit
    /// Whole seconds, at least one.
    public let retryAfterSeconds: Int

    public var status: HTTPResponse.Status { .tooManyRequests }
    public var reason: String { "rate_limited:\(limit.rawValue)" }
    public var messageKey: String { "error_rate_limited" }
    public var messageArguments: [String: String] { ["seconds": "\(retryAfterSeconds)"] }

    /// `response` as this refusal's answer: `429` and when to come back.
    func answering(_ response: Response) -> Response {
        var response = response
        response.status = status
        response.headers[.retryAfter] = "\(retryAfterSeconds)"
        return response
    }
}

/// The gateway's rate limits (SPEC §9): sign-in starts and callbacks per client address, the username check per
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
