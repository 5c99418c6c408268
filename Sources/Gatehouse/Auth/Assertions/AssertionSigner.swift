import Foundation
import GatehouseCore
import GatehouseStorage
import NIOConcurrencyHelpers

/// The signed identity assertion for a session and an app, made once and handed out until a minute before it
/// expires (or the signing key changes, or the member's level): a proxied request looks it up, it never signs.
final class AssertionSigner: Sendable {
    let ring: AssertionKeyRing
    /// `iss`: the gateway's public URL.
    let issuer: String

    private struct Held: Sendable {
        let token: String
        let kid: String
        let renewAt: Date
    }

    private struct Holder: Hashable, Sendable {
        let session: String
        let app: String
        let level: AuthLevel
    }

    private let held = NIOLockedValueBox<[Holder: Held]>([:])
    /// Each thread's own copies of the assertions it handed out, read first (no lock shared by the event loops).
    private let heldSeen = ThreadMemo<Holder, Held>(limit: 1024)
    /// Above this many held assertions, the expired ones are dropped at the next signing.
    static let pruneAbove = 20_000

    init(ring: AssertionKeyRing, issuer: String) {
        self.ring = ring
        self.issuer = issuer
    }

    /// The assertion for `session` towards an app whose upstream is `upstream` (its origin is the `aud`); `nil` while
    /// there is no signing key (the store did not answer yet).
    func assertion(for session: Session, app slug: String, upstream: URL, now: Date = Date()) -> String? {
        guard let key = ring.signing(at: now) else { return nil }
        let holder = Holder(session: session.id, app: slug, level: session.level)
        if let kept = heldSeen.value(
            for: holder, isCurrent: { $0.kid == key.kid && $0.renewAt > now }, shared: { held.withLockedValue { $0[holder] } })
        {
            return kept.token
        }
        let claims = IdentityAssertion.Claims(
            iss: issuer, aud: AppCatalog.origin(upstream), identity: session.identity, level: session.level, sessionID: session.id, issuedAt: now)
        guard let token = try? IdentityAssertion.sign(claims, key: key.privateKey, kid: key.kid) else { return nil }
        let made = Held(token: token, kid: key.kid, renewAt: now.addingTimeInterval(IdentityAssertion.lifetime - 60))
        held.withLockedValue { held in
            if held.count > Self.pruneAbove { held = held.filter { $0.value.renewAt > now } }
            held[holder] = made
        }
        heldSeen.remember(made, for: holder)
        return token
    }
}
