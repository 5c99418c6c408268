import Crypto
import Foundation

/// What the gateway tells an app about the member, signed so that the app can check it came from the gateway: a JWT
/// (RFC 7519) in JWS compact form, ES256 (ECDSA P-256 with SHA-256, RFC 7518 §3.4), its key named by `kid` in the
/// gateway's published key set.
public enum IdentityAssertion {
    /// At most this long between `iat` and `exp`.
    public static let lifetime: TimeInterval = 300

    public struct Claims: Codable, Sendable, Equatable {
        /// The gateway's public URL.
        public var iss: String
        /// The app's upstream origin: an assertion for one app is refused by another.
        public var aud: String
        public var sub: String
        public var preferredUsername: String?
        public var name: String?
        public var email: String?
        public var groups: [String]
        public var roles: [String]
        /// `sso` or `registered`.
        public var level: String
        /// A hash of the session, the same for every app: never the session's own id.
        public var sid: String
        public var iat: Int
        public var exp: Int

        enum CodingKeys: String, CodingKey {
            case iss, aud, sub, name, email, groups, roles, level, sid, iat, exp
            case preferredUsername = "preferred_username"
        }

        public init(
            iss: String, aud: String, identity: MemberIdentity, level: AuthLevel, sessionID: String, issuedAt: Date,
            lifetime: TimeInterval = IdentityAssertion.lifetime
        ) {
            self.iss = iss
            self.aud = aud
            self.sub = identity.sub
            self.preferredUsername = identity.preferredUsername
            self.name = identity.name
            self.email = identity.email
            self.groups = identity.groups
            self.roles = identity.roles
            self.level = level.rawValue
            self.sid = IdentityAssertion.sessionHash(sessionID)
            self.iat = Int(issuedAt.timeIntervalSince1970)
            self.exp = iat + Int(min(lifetime, IdentityAssertion.lifetime))
        }
    }

    /// The `sid` of a session: SHA-256 of its id under a label of its own, so that it matches no other hash of it.
    public static func sessionHash(_ sessionID: String) -> String {
        Base64URL.encode(Data(SHA256.hash(data: Data(("gatehouse-assertion-sid:" + sessionID).utf8))).prefix(16))
    }

    /// `claims` signed with `key`, named `kid`.
    public static func sign(_ claims: Claims, key: P256.Signing.PrivateKey, kid: String) throws -> String {
        let header = try JSONSerialization.data(withJSONObject: ["alg": "ES256", "typ": "JWT", "kid": kid], options: [.sortedKeys])
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let signingInput = Base64URL.encode(header) + "." + Base64URL.encode(try encoder.encode(claims))
        let signature = try key.signature(for: Data(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(signature.rawRepresentation)
    }

    public enum VerificationError: Error, Equatable {
        case malformed
        case unknownKey(String)
        case badSignature
        case wrongAudience(String)
        case expired
    }

    /// The claims of `token` when one of `keys` signed it, for `audience`, and it is in date at `now` (the demo app
    /// and the tests check assertions as an app would).
    public static func verify(_ token: String, keys: [String: P256.Signing.PublicKey], audience: String, now: Date) throws -> Claims {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerData = Base64URL.decode(String(parts[0])),
            let header = try? JSONSerialization.jsonObject(with: headerData) as? [String: Any], header["alg"] as? String == "ES256",
            let kid = header["kid"] as? String, let payload = Base64URL.decode(String(parts[1])),
            let signatureBytes = Base64URL.decode(String(parts[2]))
        else { throw VerificationError.malformed }
        guard let key = keys[kid] else { throw VerificationError.unknownKey(kid) }
        guard let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureBytes),
            key.isValidSignature(signature, for: Data((parts[0] + "." + parts[1]).utf8))
        else { throw VerificationError.badSignature }
        guard let claims = try? JSONDecoder().decode(Claims.self, from: payload) else { throw VerificationError.malformed }
        guard claims.aud == audience else { throw VerificationError.wrongAudience(claims.aud) }
        guard Double(claims.exp) > now.timeIntervalSince1970 else { throw VerificationError.expired }
        return claims
    }

    /// A key's name: the first 16 bytes of the SHA-256 of its public key (X9.63), so every replica names a key alike.
    public static func keyID(of key: P256.Signing.PublicKey) -> String {
        Base64URL.encode(Data(SHA256.hash(data: key.x963Representation)).prefix(16))
    }

    /// The P-256 signing keys of a JWK set (`{"keys": [...]}`) by `kid`, as an app reads the published set; keys of
    /// other kinds or uses are left out.
    public static func publicKeys(jwkSet: Data) -> [String: P256.Signing.PublicKey] {
        guard let set = try? JSONSerialization.jsonObject(with: jwkSet) as? [String: Any], let keys = set["keys"] as? [[String: Any]] else {
            return [:]
        }
        var result: [String: P256.Signing.PublicKey] = [:]
        for jwk in keys where jwk["kty"] as? String == "EC" && jwk["crv"] as? String == "P-256" && (jwk["use"] as? String ?? "sig") == "sig" {
            guard let kid = jwk["kid"] as? String, let x = (jwk["x"] as? String).flatMap(Base64URL.decode),
                let y = (jwk["y"] as? String).flatMap(Base64URL.decode), x.count == 32, y.count == 32,
                let key = try? P256.Signing.PublicKey(x963Representation: Data([4]) + x + y)
            else { continue }
            result[kid] = key
        }
        return result
    }

    /// The public key as a JWK (RFC 7517, RFC 7518 §6.2) for the published set.
    public static func jwk(of key: P256.Signing.PublicKey) -> [String: String] {
        let point = key.x963Representation  // 0x04 || x || y
        return [
            "kty": "EC", "crv": "P-256", "use": "sig", "alg": "ES256", "kid": keyID(of: key),
            "x": Base64URL.encode(point.dropFirst().prefix(32)), "y": Base64URL.encode(point.suffix(32)),
        ]
    }
}
