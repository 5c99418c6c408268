import Foundation
import JWTKit

/// The claims of a verified ID token that the gateway relies on.
public struct IDTokenClaims: Sendable, Equatable {
    public var issuer: String
    public var subject: String
    public var audience: [String]
    public var expiresAt: Date
    public var issuedAt: Date
    public var nonce: String?
}

/// Verifies ID tokens (OpenID Connect Core §3.1.3.7): signature by the provider's key for the token's `kid` with an
/// asymmetric algorithm, then `iss`, `aud`, `azp`, `exp`, `iat` and `nonce`.
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
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerData = Base64URL.decode(String(parts[0])),
            let header = try? JSONSerialization.jsonObject(with: headerData) as? [String: Any]
        else { throw .invalidIDToken("not a signed JWT") }
        guard let alg = header["alg"] as? String, Self.allowedAlgorithms.contains(alg) else {
            throw .invalidIDToken("algorithm \(header["alg"] as? String ?? "(none)") is not accepted")
        }
        let jwk = try await keys.key(for: header["kid"] as? String)
        let payload: IDTokenPayload
        do {
            let collection = JWTKeyCollection()
            try await collection.add(jwk: jwk)
            payload = try await collection.verify(token, as: IDTokenPayload.self)
        } catch {
            throw .invalidIDToken("signature: \(error)")
        }
        let claims = IDTokenClaims(
            issuer: payload.iss, subject: payload.sub, audience: payload.aud,
            expiresAt: Date(timeIntervalSince1970: payload.exp), issuedAt: Date(timeIntervalSince1970: payload.iat), nonce: payload.nonce
        )
        try check(claims, azp: payload.azp, expectedNonce: expectedNonce, now: now)
        return claims
    }

    func check(_ claims: IDTokenClaims, azp: String?, expectedNonce: String?, now: Date) throws(OIDCError) {
        guard ProviderMetadata.trimmed(claims.issuer) == ProviderMetadata.trimmed(issuer) else {
            throw .invalidIDToken("issuer \(claims.issuer) is not \(issuer)")
        }
        guard claims.audience.contains(clientID) else { throw .invalidIDToken("audience does not include \(clientID)") }
        if claims.audience.count > 1, let azp, azp != clientID { throw .invalidIDToken("authorized party is \(azp)") }
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
    var nonce: String?
    var azp: String?

    enum CodingKeys: String, CodingKey { case iss, sub, aud, exp, iat, nonce, azp }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        iss = try container.decode(String.self, forKey: .iss)
        sub = try container.decode(String.self, forKey: .sub)
        if let single = try? container.decode(String.self, forKey: .aud) {
            aud = [single]
        } else {
            aud = try container.decode([String].self, forKey: .aud)
        }
        exp = try container.decode(Double.self, forKey: .exp)
        iat = try container.decode(Double.self, forKey: .iat)
        nonce = try container.decodeIfPresent(String.self, forKey: .nonce)
        azp = try container.decodeIfPresent(String.self, forKey: .azp)
    }

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}
