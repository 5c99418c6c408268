import Crypto
import Foundation
import GatehouseCore
import GatehouseMatrix

/// What lets a call's page place a call: only the form of the member's own page (`POST /calls/start`, its token
/// checked) makes one, for one room and one kind of call, good for a minute, signed with the session's own secret (its
/// CSRF token, which no other site can read), so that every replica checks it alike. A call's address without one
/// (another site navigating the member's window to `/calls/call?room=…&media=video`) offers the call and never places
/// it: a GET never starts a call (the class of CVE-2019-13450).
struct CallPlacement: Equatable {
    let room: String
    let media: Call.Media
    /// Seconds since 1970 after which the grant no longer places the call.
    let expires: Int

    static let lifetime = 60

    /// The grant for `room` and `media`, as the call's address carries it (`place=`).
    static func grant(room: String, media: Call.Media, key: String, now: Date) -> String {
        let expires = Int(now.timeIntervalSince1970) + lifetime
        return "\(expires).\(signature(room: room, media: media, expires: expires, key: key))"
    }

    /// Whether `grant` places a call of `media` in `room` now, for the session whose secret is `key`.
    static func allows(_ grant: String?, room: String, media: Call.Media, key: String, now: Date) -> Bool {
        guard let grant, let dot = grant.firstIndex(of: "."), let expires = Int(grant[..<dot]) else { return false }
        guard Int(now.timeIntervalSince1970) <= expires, expires <= Int(now.timeIntervalSince1970) + lifetime else { return false }
        return constantTimeEquals(String(grant[grant.index(after: dot)...]), signature(room: room, media: media, expires: expires, key: key))
    }

    static func signature(room: String, media: Call.Media, expires: Int, key: String) -> String {
        let message = Data("gatehouse call placement\n\(room)\n\(media.rawValue)\n\(expires)".utf8)
        return Base64URL.encode(Data(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: Data(key.utf8)))))
    }
}
