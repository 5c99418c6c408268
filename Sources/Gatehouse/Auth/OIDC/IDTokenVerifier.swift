import Foundation
import GatehouseCore
import JWTKit

/// The claims of a verified ID token that the gateway relies on.
public struct IDTokenClaims: Sendable, Equatable {
    public var issuer: String
    public var subject: String
    public var audience: [String]
    public var expiresAt: Date
    public var issuedAt: Date
    public var notBefore: Date? = nil
    public var nonce: String?
    /// The provider's session (`sid`), which a back-channel logout may name.
    public var sessionID: String? = nil
    /// When the member last authenticated at the provider (`auth_time`).
    public var authTime: Date? = nil
    /// The authentication context class the provider says it satisfied (`acr`).
    public var acr: String? = nil
}

/// Verifies ID tokens (OpenID Connect Core §3.1.3.7): signature by the provider's key for the token's `kid` with an
/// asymmetric algorithm and no critical extensions, then `iss`, `aud`, `azp`, `nbf`, `exp`, `iat` and `nonce`.
public struct IDTokenVerifier: Sendable {
    public static let allowedAlgorithms: Set = ["RS256", "RS384", "RS512", "ES256", "ES384", "PS256"]

    let issuer: String
    let clientID: String
    let keys: SigningKeySet
    let clockSkew: TimeInterval

    public init(issuer: String, clientID: String, keys: SigningKeySet, clockSkew: TimeInterval = 60) {
        self.issuer = issuer
        self.clientID = clientID
        self.keys = keys
        self.clockSkew = clockSkew
    }

    public func verify(_ token: String, expectedNonce: String?, now: Date = Date()) async throws(OIDCError) -> IDTokenClaims {
        let payload = try await verifiedPayload(token, as: IDTokenPayload.self)
        let claims = IDTokenClaims(
            issuer: payload.iss, subject: payload.sub, audience: payload.aud,
            expiresAt: Date(timeIntervalSince1970: payload.exp), issuedAt: Date(timeIntervalSince1970: payload.iat),
            notBefore: payload.nbf.map(Date.init(timeIntervalSince1970:)), nonce: payload.nonce, sessionID: payload.sid,
            authTime: payload.auth_time.map(Date.init(timeIntervalSince1970:)), acr: payload.acr
        )
        try check(claims, azp: payload.azp, expectedNonce: expectedNonce, now: now)
        return claims
    }

    /// An ID token a refresh returned (OpenID Connect Core §12.2): checked as at sign-in, for the session's own
    /// subject; a nonce, when it carries one, must be the sign-in's.
    public func verifyRefreshed(_ token: String, subject: String, signInNonce: String?, now: Date = Date()) async throws(OIDCError) -> IDTokenClaims {
        let claims = try await verify(token, expectedNonce: nil, now: now)
        guard claims.subject == subject else { throw .invalidIDToken("a refresh changed the subject") }
        if let nonce = claims.nonce, nonce != signInNonce { throw .invalidIDToken("a refresh's nonce is not the sign-in's") }
        return claims
    }

    /// The payload of a token signed by the provider: a JWS with an accepted asymmetric algorithm, no critical
    /// extensions, and a signature by the key its `kid` names (or, without one, by one of the provider's keys).
    /// With `types`, a header `typ` must be one of them (compared without case or an `application/` prefix).
    func verifiedPayload<Payload: JWTPayload>(_ token: String, as _: Payload.Type, types: Set<String>? = nil) async throws(OIDCError) -> Payload {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerData = Base64URL.decode(String(parts[0])),
            let header = try? JSONSerialization.jsonObject(with: headerData) as? [String: Any]
        else { throw .invalidIDToken("not a signed JWT") }
        guard let alg = header["alg"] as? String, Self.allowedAlgorithms.contains(alg) else {
            throw .invalidIDToken("algorithm \(header["alg"] as? String ?? "(none)") is not accepted")
        }
        // RFC 7515 §4.1.11: an extension the recipient does not understand makes the token invalid.
        if header["crit"] != nil { throw .invalidIDToken("critical header extensions are not understood") }
        if let types, let typ = header["typ"] {
            let name = (typ as? String)?.lowercased() ?? ""
            guard types.contains(name.hasPrefix("application/") ? String(name.dropFirst(12)) : name) else {
                throw .invalidIDToken("type \(typ) is not accepted")
            }
        }
        let kid = header["kid"] as? String
        guard let payload = try await verifySignature(token, as: Payload.self, with: keys.keys(for: kid)) else {
            throw .invalidIDToken("signature does not verify with the provider's keys")
        }
        return payload
    }

    /// The payload when one of `candidates` verifies the signature; if none does, the key set is refetched once
    /// (rate-limited: the provider may have rotated its key, under the same `kid` or with none) and tried again.
    func verifySignature<Payload: JWTPayload>(_ token: String, as _: Payload.Type, with candidates: [JWK]) async throws(OIDCError) -> Payload? {
        if let payload = await Self.firstVerifying(token, as: Payload.self, candidates) { return payload }
        let kid = Self.kid(of: token)
        guard try await keys.refreshIfAllowed() else { return nil }
        return await Self.firstVerifying(token, as: Payload.self, try await keys.keys(for: kid))
    }

    static func firstVerifying<Payload: JWTPayload>(_ token: String, as _: Payload.Type, _ candidates: [JWK]) async -> Payload? {
        for jwk in candidates {
            let collection = JWTKeyCollection()
            guard (try? await collection.add(jwk: jwk)) != nil else { continue }
            if let payload = try? await collection.verify(token, as: Payload.self) { return payload }
        }
        return nil
    }

    static func kid(of token: String) -> String? {
        guard let head = token.split(separator: ".").first, let data = Base64URL.decode(String(head)),
            let header = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return nil }
        return header["kid"] as? String
    }

    func check(_ claims: IDTokenClaims, azp: String?, expectedNonce: String?, now: Date) throws(OIDCError) {
        // Exactly as discovered (and configured): never trimmed or case-folded (OpenID Connect Core §3.1.3.7).
        guard claims.issuer == issuer else { throw .invalidIDToken("issuer \(claims.issuer) is not \(issuer)") }
        guard claims.audience.contains(clientID) else { throw .invalidIDToken("audience does not include \(clientID)") }
        if claims.audience.count > 1, azp == nil { throw .invalidIDToken("several audiences and no authorized party") }
        if let azp, azp != clientID { throw .invalidIDToken("authorized party is \(azp)") }
        if let notBefore = claims.notBefore, notBefore.addingTimeInterval(-clockSkew) > now { throw .invalidIDToken("not valid yet") }
        guard claims.expiresAt.addingTimeInterval(clockSkew) > now else { throw .invalidIDToken("expired") }
        guard claims.issuedAt.addingTimeInterval(-clockSkew) <= now else { throw .invalidIDToken("issued in the future") }
        guard !claims.subject.isEmpty else { throw .invalidIDToken("no subject") }
        if let expectedNonce, claims.nonce != expectedNonce { throw .invalidIDToken("nonce does not match") }
    }
}

/// The raw payload; claim checks happen in `IDTokenVerifier.check` so that they can be tested without signatures.
struct IDTokenPayload: JWTPayload {
    var iss: String
    var sub: String
    var aud: [String]
    var exp: Double
    var iat: Double
    var nbf: Double?
    var nonce: String?
    var azp: String?
    var sid: String?
    var auth_time: Double?
    var acr: String?

    enum CodingKeys: String, CodingKey { case iss, sub, aud, exp, iat, nbf, nonce, azp, sid, auth_time, acr }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        iss = try container.decode(String.self, forKey: .iss)
        sub = try container.decode(String.self, forKey: .sub)
        aud = try container.decodeAudience(forKey: .aud)
        exp = try container.decode(Double.self, forKey: .exp)
        iat = try container.decode(Double.self, forKey: .iat)
        nbf = try container.decodeIfPresent(Double.self, forKey: .nbf)
        nonce = try container.decodeIfPresent(String.self, forKey: .nonce)
        azp = try container.decodeIfPresent(String.self, forKey: .azp)
        sid = try container.decodeIfPresent(String.self, forKey: .sid)
        auth_time = try container.decodeIfPresent(Double.self, forKey: .auth_time)
        acr = try container.decodeIfPresent(String.self, forKey: .acr)
    }

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

extension KeyedDecodingContainer {
    /// `aud`: one string or a list of them.
    func decodeAudience(forKey key: Key) throws -> [String] {
        if let single = try? decode(String.self, forKey: key) { return [single] }
        return try decode([String].self, forKey: key)
    }
}
