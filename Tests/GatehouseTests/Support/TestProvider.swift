import Crypto
import Foundation
import GatehouseCore
import JWTKit
import _CryptoExtras

/// Keys and tokens as a provider would make them.
struct TestProvider {
    static let issuer = "https://idp.example.org/realms/heritage"
    static let clientID = "signal_client"

    let ecKey = ES256PrivateKey()
    let rsaKey: JWTKit.Insecure.RSA.PrivateKey
    let signer = JWTKeyCollection()

    init() async throws {
        rsaKey = try JWTKit.Insecure.RSA.PrivateKey(backing: _RSA.Signing.PrivateKey(keySize: .bits2048))
        await signer.add(ecdsa: ecKey, kid: "ec-1")
        await signer.add(rsa: rsaKey, digestAlgorithm: .sha256, kid: "rsa-1")
    }

    func jwk(ecKid: String = "ec-1") throws -> [[String: Any]] {
        let ec = ecKey.publicKey.parameters!
        let (modulus, exponent) = try rsaKey.publicKey.getKeyPrimitives()
        return [
            // Keycloak lists an encryption key first; it must never be used for signatures.
            ["kty": "RSA", "use": "enc", "alg": "RSA-OAEP", "kid": "enc-1", "n": Base64URL.encode(modulus), "e": Base64URL.encode(exponent)],
            ["kty": "EC", "crv": "P-256", "use": "sig", "kid": ecKid, "x": ec.x, "y": ec.y],
            ["kty": "RSA", "use": "sig", "alg": "RS256", "kid": "rsa-1", "n": Base64URL.encode(modulus), "e": Base64URL.encode(exponent)],
        ]
    }

    func jwksData(ecKid: String = "ec-1") throws -> Data {
        try JSONSerialization.data(withJSONObject: ["keys": jwk(ecKid: ecKid)])
    }

    func claims(
        iss: String = issuer, aud: [String] = [clientID], exp: Date = Date().addingTimeInterval(300), iat: Date = Date(),
        nonce: String? = "n-1", sub: String = "member-1"
    ) -> TestClaims {
        TestClaims(
            iss: iss, sub: sub, aud: aud.count == 1 ? .single(aud[0]) : .many(aud), exp: exp.timeIntervalSince1970, iat: iat.timeIntervalSince1970,
            nonce: nonce)
    }

    func sign(_ claims: TestClaims, kid: String = "ec-1") async throws -> String {
        try await signer.sign(claims, kid: JWKIdentifier(string: kid))
    }

    /// A token with any header, signed by `signature` bytes or none: for the forgeries JWT libraries are known for.
    static func forge(header: [String: Any], claims: some Encodable, signature: (Data) -> Data = { _ in Data() }) throws -> String {
        let head = Base64URL.encode(try JSONSerialization.data(withJSONObject: header))
        let body = Base64URL.encode(try JSONEncoder().encode(claims))
        return "\(head).\(body).\(Base64URL.encode(signature(Data("\(head).\(body)".utf8))))"
    }
}
