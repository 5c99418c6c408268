import Foundation
import GatehouseCore
import NIOConcurrencyHelpers

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
