import Foundation
import JWTKit

/// What a verified back-channel logout token ends: the provider's session `sid`, every session of `sub`, or the
/// session that has both.
public struct LogoutTokenClaims: Sendable, Equatable {
    public var issuer: String
    public var subject: String?
    public var sessionID: String?
    /// `jti`: a token is honoured once.
    public var tokenID: String
    /// Until when the token could be presented again, so until when its `jti` must be remembered.
    public var replayableUntil: Date
}

/// OpenID Connect Back-Channel Logout 1.0 §2.6: a logout token is checked like an ID token (signature by the
/// provider's keys, `iss`, `aud`, `iat`, `exp`), and it must carry the back-channel logout event, a `sub` or a
/// `sid`, a `jti`, and no `nonce` (so that an ID token can never pass for one).
extension IDTokenVerifier {
    public static let backChannelLogoutEvent = "http://schemas.openid.net/event/backchannel-logout"
    /// A token without `exp` counts as fresh this long after its `iat`.
    public static let logoutTokenLifetime: TimeInterval = 300
    /// Header `typ`s a logout token may have (RFC 8725 §3.11 explicit typing; absent is accepted too).
    static let logoutTokenTypes: Set = ["logout+jwt", "jwt"]

    public func verifyLogoutToken(_ token: String, now: Date = Date()) async throws(OIDCError) -> LogoutTokenClaims {
        let payload: LogoutTokenPayload
        do {
            payload = try await verifiedPayload(token, as: LogoutTokenPayload.self, types: Self.logoutTokenTypes)
        } catch .invalidIDToken(let detail) {
            throw .invalidLogoutToken(detail)
        }
        return try check(payload, now: now)
    }

    func check(_ payload: LogoutTokenPayload, now: Date) throws(OIDCError) -> LogoutTokenClaims {
        guard let iss = payload.iss, iss == issuer else { throw .invalidLogoutToken("issuer \(payload.iss ?? "(none)") is not \(issuer)") }
        guard payload.aud.contains(clientID) else { throw .invalidLogoutToken("audience does not include \(clientID)") }
        guard let iat = payload.iat.map(Date.init(timeIntervalSince1970:)) else { throw .invalidLogoutToken("no iat") }
        guard iat.addingTimeInterval(-clockSkew) <= now else { throw .invalidLogoutToken("issued in the future") }
        let expiresAt = payload.exp.map(Date.init(timeIntervalSince1970:)) ?? iat.addingTimeInterval(Self.logoutTokenLifetime)
        guard expiresAt.addingTimeInterval(clockSkew) > now else { throw .invalidLogoutToken("expired") }
        guard payload.events?[Self.backChannelLogoutEvent] == .object else {
            throw .invalidLogoutToken("events does not hold the back-channel logout event as an object")
        }
        guard !payload.hasNonce else { throw .invalidLogoutToken("a logout token carries no nonce") }
        let subject = payload.sub.flatMap { $0.isEmpty ? nil : $0 }
        let sessionID = payload.sid.flatMap { $0.isEmpty ? nil : $0 }
        guard subject != nil || sessionID != nil else { throw .invalidLogoutToken("neither sub nor sid") }
        guard let jti = payload.jti, !jti.isEmpty, jti.utf8.count <= 256 else { throw .invalidLogoutToken("no usable jti") }
        return LogoutTokenClaims(
            issuer: iss, subject: subject, sessionID: sessionID, tokenID: jti, replayableUntil: expiresAt.addingTimeInterval(clockSkew))
    }
}

/// The raw payload, every claim optional so that `check` can say exactly what is wrong.
struct LogoutTokenPayload: JWTPayload {
    /// Only the shape of an event's value matters: the specification wants an object (today an empty one).
    enum Shape: Equatable, Decodable {
        case object, other
        init(from decoder: any Decoder) throws {
            self = (try? decoder.container(keyedBy: AnyCodingKey.self)) != nil ? .object : .other
        }
    }

    var iss: String?
    var sub: String?
    var sid: String?
    var aud: [String]
    var iat: Double?
    var exp: Double?
    var jti: String?
    var events: [String: Shape]?
    var hasNonce: Bool

    enum CodingKeys: String, CodingKey { case iss, sub, sid, aud, iat, exp, jti, events, nonce }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        iss = try? container.decodeIfPresent(String.self, forKey: .iss)
        sub = try? container.decodeIfPresent(String.self, forKey: .sub)
        sid = try? container.decodeIfPresent(String.self, forKey: .sid)
        aud = (try? container.decodeAudience(forKey: .aud)) ?? []
        iat = try? container.decodeIfPresent(Double.self, forKey: .iat)
        exp = try? container.decodeIfPresent(Double.self, forKey: .exp)
        jti = try? container.decodeIfPresent(String.self, forKey: .jti)
        events = try? container.decodeIfPresent([String: Shape].self, forKey: .events)
        hasNonce = container.contains(.nonce)
    }

    /// Only read, never written; encodes the claims it checks (`JWTPayload` wants both directions).
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(iss, forKey: .iss)
        try container.encodeIfPresent(sub, forKey: .sub)
        try container.encodeIfPresent(sid, forKey: .sid)
        try container.encode(aud, forKey: .aud)
        try container.encodeIfPresent(iat, forKey: .iat)
        try container.encodeIfPresent(exp, forKey: .exp)
        try container.encodeIfPresent(jti, forKey: .jti)
    }

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

struct AnyCodingKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}
