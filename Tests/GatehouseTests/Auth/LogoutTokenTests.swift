import Crypto
import Foundation
import JWTKit
import Testing

@testable import Gatehouse

/// Back-channel logout tokens (OpenID Connect Back-Channel Logout 1.0 §2.6): what a genuine one says, and every
/// forgery and misuse refused with a reason.
@Suite struct LogoutTokenTests {
    static func verifier(_ provider: TestProvider) throws -> IDTokenVerifier {
        let document = try provider.jwksData()
        return IDTokenVerifier(
            issuer: TestProvider.issuer, clientID: TestProvider.clientID, keys: SigningKeySet(minimumRefetchInterval: 3600) { document })
    }

    @Test func aGenuineTokenNamesTheSessionAndTheMember() async throws {
        let provider = try await TestProvider()
        let claims = LogoutClaims()
        let verified = try await Self.verifier(provider).verifyLogoutToken(try await provider.sign(logout: claims))
        #expect(verified.subject == "member-1" && verified.sessionID == "sid-1" && verified.tokenID == claims.jti)
        #expect(verified.issuer == TestProvider.issuer && verified.replayableUntil > Date().addingTimeInterval(120))
        // `sid` alone, `sub` alone, RSA, and no `typ` at all are fine too.
        for (claims, kid) in [(LogoutClaims(sub: nil), "ec-1"), (LogoutClaims(sid: nil), "rsa-1"), (LogoutClaims(exp: nil), "ec-1")] {
            #expect(try await Self.verifier(provider).verifyLogoutToken(try await provider.sign(logout: claims, kid: kid)).tokenID == claims.jti)
        }
        #expect(try await Self.verifier(provider).verifyLogoutToken(try await provider.sign(logout: LogoutClaims(), typ: "JWT")).subject != nil)
    }

    static let hostileClaims: [(String, LogoutClaims)] = [
        ("wrong iss", LogoutClaims(iss: "https://evil.example.org/realms/heritage")),
        ("no iss", LogoutClaims(iss: nil)),
        ("wrong aud", LogoutClaims(aud: "someone-else")),
        ("no aud", LogoutClaims(aud: nil)),
        ("a nonce", LogoutClaims(nonce: "n-1")),
        ("no events", LogoutClaims(events: nil)),
        ("another event", LogoutClaims(events: ["http://schemas.openid.net/event/other": .object])),
        ("the event as a string", LogoutClaims(events: [IDTokenVerifier.backChannelLogoutEvent: .string])),
        (
            "expired",
            LogoutClaims(iat: Date().addingTimeInterval(-600).timeIntervalSince1970, exp: Date().addingTimeInterval(-300).timeIntervalSince1970)
        ),
        ("old without exp", LogoutClaims(iat: Date().addingTimeInterval(-900).timeIntervalSince1970, exp: nil)),
        ("issued in the future", LogoutClaims(iat: Date().addingTimeInterval(600).timeIntervalSince1970)),
        ("no iat", LogoutClaims(iat: nil)),
        ("neither sub nor sid", LogoutClaims(sub: nil, sid: nil)),
        ("empty sub and sid", LogoutClaims(sub: "", sid: "")),
        ("no jti", LogoutClaims(jti: nil)),
        ("a huge jti", LogoutClaims(jti: String(repeating: "j", count: 1000))),
    ]

    @Test(arguments: hostileClaims)
    func claimsThatMakeItNoLogoutToken(_ name: String, _ claims: LogoutClaims) async throws {
        let provider = try await TestProvider()
        let token = try await provider.sign(logout: claims)
        await #expect(throws: OIDCError.self, "\(name)") { try await Self.verifier(provider).verifyLogoutToken(token) }
    }

    @Test func forgeriesAreRefused() async throws {
        let provider = try await TestProvider()
        let verifier = try Self.verifier(provider)
        let impostor = try await TestProvider()
        let (modulus, _) = try provider.rsaKey.publicKey.getKeyPrimitives()
        let forgeries: [(String, String)] = [
            ("another key under a known kid", try await impostor.sign(logout: LogoutClaims())),
            ("alg none", try TestProvider.forge(header: ["alg": "none", "kid": "ec-1"], claims: LogoutClaims())),
            (
                "HMAC with the public key as secret",
                try TestProvider.forge(header: ["alg": "HS256", "kid": "rsa-1"], claims: LogoutClaims()) { input in
                    Data(HMAC<SHA256>.authenticationCode(for: input, using: SymmetricKey(data: modulus)))
                }
            ),
            ("another type", try await provider.sign(logout: LogoutClaims(), typ: "at+jwt")),
            ("not a JWT", "logout"),
        ]
        for (name, token) in forgeries {
            await #expect(throws: OIDCError.self, "\(name)") { try await verifier.verifyLogoutToken(token) }
        }
    }

    /// An ID token (a nonce, no events) is never taken for a logout token, even though its signature is good.
    @Test func anIDTokenIsNoLogoutToken() async throws {
        let provider = try await TestProvider()
        let idToken = try await provider.sign(provider.claims())
        await #expect(throws: OIDCError.self) { try await Self.verifier(provider).verifyLogoutToken(idToken) }
    }
}
