import Foundation
import GatehouseCore
import PostgresNIO

/// Limits the replicas share: each decision is one statement, so two replicas counting the same key at once
/// cannot both take its last request.
public struct PostgresRateLimitStore: RateLimitStore {
    let database: PostgresDatabase

    public init(database: PostgresDatabase) { self.database = database }

    public func admit(key: String, rule: RateLimitRule, now: Date) async throws -> RateLimitDecision {
        let (now, interval, period) = (now.timeIntervalSince1970, rule.interval, Double(rule.periodSeconds))
        // The update happens only where the rule lets the request through (the row locked meanwhile, so that
        // concurrent requests are decided one after the other); the outer select reads the row as this statement's
        // snapshot had it, which is what a refusal's wait is computed from.
        let rows = try await database.query(
            """
            WITH admitted AS (
                INSERT INTO rate_limits AS r (key, used_until) VALUES (\(key), \(now) + \(interval))
                ON CONFLICT (key) DO UPDATE SET used_until = GREATEST(r.used_until, \(now)) + \(interval)
                WHERE GREATEST(r.used_until, \(now)) + \(interval) - \(period) <= \(now)
                RETURNING used_until
            )
            SELECT (SELECT used_until FROM admitted), (SELECT used_until FROM rate_limits WHERE key = \(key))
            """)
        let (admitted, before) = try PostgresDatabase.decoding { try rows.first?.decode((Double?, Double?).self) } ?? (nil, nil)
        if let admitted { return .allowed(usedUntil: admitted) }
        // Refused. Another replica may have counted since the snapshot, so the wait it shows is the least there is.
        let wait = max(before ?? now, now) + interval - period - now
        return .limited(retryAfter: max(wait, 0))
    }

    public func deleteExpired(now: Date) async throws -> Int {
        try await database.query("DELETE FROM rate_limits WHERE used_until <= \(now.timeIntervalSince1970) RETURNING 1").count
    }
}
