import Crypto
import Foundation
import Testing

@testable import GatehouseMatrix

/// The JWT the gateway signs for Synapse's JWT login: HS256 under the shared secret, for one localpart, a minute.
@Suite struct LoginTokenTests {
    static func decode(_ part: Substring) throws -> [String: Any] {
        var text = part.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while text.count % 4 != 0 { text += "=" }
        let data = try #require(Data(base64Encoded: text))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    @Test func aMinuteForOneLocalpartSignedWithTheSecret() throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let token = LoginToken(secret: "shared-secret", audience: "chat.test").token(localpart: "alice.c5", now: now)
        let parts = token.split(separator: ".")
        #expect(parts.count == 3)
        #expect(try Self.decode(parts[0])["alg"] as? String == "HS256")
        let claims = try Self.decode(parts[1])
        #expect(claims["sub"] as? String == "alice.c5" && claims["iss"] as? String == "gatehouse" && claims["aud"] as? String == "chat.test")
        #expect(claims["exp"] as? Int == 1_800_000_060 && claims["iat"] as? Int == 1_800_000_000)
        let expected = HMAC<SHA256>.authenticationCode(for: Data("\(parts[0]).\(parts[1])".utf8), using: SymmetricKey(data: Data("shared-secret".utf8)))
        #expect(String(parts[2]) == LoginToken.base64URL(Data(expected)))
        // Another secret signs otherwise.
        #expect(LoginToken(secret: "other", audience: "chat.test").token(localpart: "alice.c5", now: now) != token)
    }
}
