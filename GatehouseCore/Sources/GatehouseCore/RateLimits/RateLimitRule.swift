import Foundation

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
    public var interval: Double { Double(periodSeconds) / Double(limit) }

    /// The decision for one more request at `now` when the key's allowance is used up to `usedUntil` (seconds since
    /// 1970; `nil` for a key without requests): the new `usedUntil` when it is let through, else the wait.
    public func decide(usedUntil: Double?, now: Double) -> RateLimitDecision {
        let next = max(usedUntil ?? now, now) + interval
        let earliest = next - Double(periodSeconds)
        return earliest <= now ? .allowed(usedUntil: next) : .limited(retryAfter: earliest - now)
    }
}
