import Foundation
import GatehouseCore

/// What a sign-in's ID token proves of the member (OpenID Connect Core §2, §3.1.2.1): when they last authenticated at
/// the provider (`auth_time`) and how (`acr`), checked against what a step-up asked for. A provider that answers a
/// step-up without re-authenticating the member, or with another class than asked, is refused, never trusted.
enum SignInProof {
    /// The assurance the answer to `attempt` gives the session (whose assurance was `previous`), by the gateway's
    /// clock; `clockSkew` is how far the provider's clock may be from the gateway's.
    static func assurance(
        of claims: IDTokenClaims, for attempt: LoginAttempt, previous: Assurance?, clockSkew: TimeInterval, now: Date = Date()
    ) throws(OIDCError) -> Assurance {
        // Never later than now: a provider's clock ahead of ours proves nothing more.
        var authenticatedAt = claims.authTime.map { min($0, now) }
        if let maxAge = attempt.stepUp?.maxAge {
            guard let authTime = claims.authTime else {
                throw .notReauthenticated("max_age was asked for and the ID token has no auth_time")
            }
            if let before = previous?.authenticatedAt, authTime <= before {
                throw .notReauthenticated("auth_time is not newer than the session's last authentication")
            }
            // An authentication during this attempt counts from the attempt's start at the earliest (the provider's
            // clock may be behind ours); an older one only when it is within `max_age` by our clock.
            let duringAttempt = authTime >= attempt.createdAt.addingTimeInterval(-clockSkew)
            guard duringAttempt || now.timeIntervalSince(authTime) <= TimeInterval(maxAge) else {
                throw .notReauthenticated("auth_time is older than the max_age of \(maxAge) seconds asked for")
            }
            authenticatedAt = duringAttempt ? min(now, max(authTime, attempt.createdAt)) : authTime
        }
        if let classes = attempt.stepUp?.acr, !classes.isEmpty {
            guard let acr = claims.acr, classes.contains(acr) else {
                throw .notReauthenticated("acr \(claims.acr ?? "(none)") is not one of \(classes.joined(separator: ", "))")
            }
        }
        return Assurance(authenticatedAt: authenticatedAt, acr: claims.acr, pinVerifiedAt: previous?.pinVerifiedAt)
    }
}
