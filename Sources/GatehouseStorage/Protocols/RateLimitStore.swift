import Foundation
import GatehouseCore

/// Where each key's allowance is kept: in memory for one gateway, in PostgreSQL for replicas that share limits.
public protocol RateLimitStore: Sendable {
    /// Counts one request against `key` if `rule` lets it through at `now`, atomically.
    func admit(key: String, rule: RateLimitRule, now: Date) async throws -> RateLimitDecision
    /// Forgets keys whose allowance is whole again; returns how many.
    func deleteExpired(now: Date) async throws -> Int
}
