import Foundation

public enum RateLimitDecision: Sendable, Equatable {
    case allowed(usedUntil: Double)
    /// Seconds until the next request would be let through.
    case limited(retryAfter: Double)
}
