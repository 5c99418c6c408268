import Crypto
import Foundation

/// The short-lived JWT the gateway signs for Synapse's JWT login (`jwt_config`, `org.matrix.login.jwt`): HS256 with a
/// secret only the gateway and the homeserver hold, for one localpart, good for a minute. It proves nothing but that
/// the gateway asks; the gateway asks only for a registered member's own account.
public struct LoginToken: Sendable {
    public let secret: SymmetricKey
    public let issuer: String
    public let audience: String?

    public init(secret: String, issuer: String = "gatehouse", audience: String? = nil) {
        self.secret = SymmetricKey(data: Data(secret.utf8))
        self.issuer = issuer
        self.audience = audience
    }

    public static let lifetime: TimeInterval = 60

    public func token(localpart: String, now: Date = Date()) -> String {
        var claims: [String: Any] = [
            "sub": localpart, "iss": issuer, "iat": Int(now.timeIntervalSince1970), "exp": Int(now.timeIntervalSince1970 + Self.lifetime),
        ]
        if let audience { claims["aud"] = audience }
        let header = Self.base64URL(Data(#"{"alg":"HS256","typ":"JWT"}"#.utf8))
        let payload = Self.base64URL((try? JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys])) ?? Data())
        let signature = HMAC<SHA256>.authenticationCode(for: Data("\(header).\(payload)".utf8), using: secret)
        return "\(header).\(payload).\(Self.base64URL(Data(signature)))"
    }

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }
}
