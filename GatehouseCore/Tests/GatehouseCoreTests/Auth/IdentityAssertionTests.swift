import Crypto
import Foundation
import Testing

@testable import GatehouseCore

@Suite struct IdentityAssertionTests {
    static let identity = MemberIdentity(
        sub: "f3a1", name: "Alice Example", email: "alice@example.org", preferredUsername: "alice", roles: ["staff"], groups: ["/team"])
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    static func claims(aud: String = "http://wiki.internal:8080", at date: Date = now) -> IdentityAssertion.Claims {
        .init(iss: "https://gate.example.org", aud: aud, identity: identity, level: .registered, sessionID: "session-1", issuedAt: date)
    }

    @Test func signedClaimsVerifyWithThePublishedKeyAndSayWhoTheMemberIs() throws {
        let key = P256.Signing.PrivateKey()
        let kid = IdentityAssertion.keyID(of: key.publicKey)
        let token = try IdentityAssertion.sign(Self.claims(), key: key, kid: kid)
        let claims = try IdentityAssertion.verify(token, keys: [kid: key.publicKey], audience: "http://wiki.internal:8080", now: Self.now)
        #expect(claims == Self.claims())
        #expect(claims.exp - claims.iat == 300 && claims.level == "registered" && claims.preferredUsername == "alice")
        #expect(claims.sid == IdentityAssertion.sessionHash("session-1") && !token.contains("session-1"))
        #expect(claims.sid != IdentityAssertion.sessionHash("session-2") && claims.sid.count == 22)
        // The payload names its claims as JWT libraries expect them.
        let payload = try #require(Base64URL.decode(String(token.split(separator: ".")[1])))
        let object = try #require(try JSONSerialization.jsonObject(with: payload) as? [String: Any])
        #expect(Set(object.keys) == ["iss", "aud", "sub", "preferred_username", "name", "email", "groups", "roles", "level", "sid", "iat", "exp"])
    }

    @Test func aForgedTamperedMisaddressedOrStaleAssertionIsRefused() throws {
        let key = P256.Signing.PrivateKey()
        let kid = IdentityAssertion.keyID(of: key.publicKey)
        let keys = [kid: key.publicKey]
        let token = try IdentityAssertion.sign(Self.claims(), key: key, kid: kid)
        let parts = token.split(separator: ".").map(String.init)
        func verify(_ token: String, audience: String = "http://wiki.internal:8080", now: Date = Self.now) throws {
            _ = try IdentityAssertion.verify(token, keys: keys, audience: audience, now: now)
        }
        // Another key under the same name.
        let forged = try IdentityAssertion.sign(Self.claims(), key: P256.Signing.PrivateKey(), kid: kid)
        #expect(throws: IdentityAssertion.VerificationError.badSignature) { try verify(forged) }
        // The payload changed (a role added), the signature kept.
        var elevated = Self.claims()
        elevated.roles.append("admin")
        let payload = Base64URL.encode(try JSONEncoder().encode(elevated))
        #expect(throws: IdentityAssertion.VerificationError.badSignature) { try verify([parts[0], payload, parts[2]].joined(separator: ".")) }
        // `alg: none` and other headers, an unknown key, garbage.
        let none = Base64URL.encode(Data(#"{"alg":"none","kid":"\#(kid)"}"#.utf8))
        #expect(throws: IdentityAssertion.VerificationError.malformed) { try verify([none, parts[1], ""].joined(separator: ".")) }
        let unknown = try IdentityAssertion.sign(Self.claims(), key: key, kid: "other")
        #expect(throws: IdentityAssertion.VerificationError.unknownKey("other")) { try verify(unknown) }
        #expect(throws: IdentityAssertion.VerificationError.malformed) { try verify("a.b") }
        // Another app's, and an expired one.
        #expect(throws: IdentityAssertion.VerificationError.wrongAudience("http://wiki.internal:8080")) {
            try verify(token, audience: "http://chat.internal")
        }
        #expect(throws: IdentityAssertion.VerificationError.expired) { try verify(token, now: Self.now.addingTimeInterval(300)) }
    }

    @Test func theJWKCarriesThePointAndANameEveryReplicaGivesIt() throws {
        let key = P256.Signing.PrivateKey()
        let jwk = IdentityAssertion.jwk(of: key.publicKey)
        #expect(jwk["kty"] == "EC" && jwk["crv"] == "P-256" && jwk["alg"] == "ES256" && jwk["use"] == "sig")
        // Read back as an app reads the published set; keys of other kinds and uses are left out.
        let encryption = ["kty": "RSA", "use": "enc", "kid": "rsa", "n": "AQAB", "e": "AQAB"]
        let set = try JSONSerialization.data(withJSONObject: ["keys": [encryption, jwk]])
        let keys = IdentityAssertion.publicKeys(jwkSet: set)
        let rebuilt = try #require(jwk["kid"].flatMap { keys[$0] })
        #expect(keys.count == 1 && rebuilt.rawRepresentation == key.publicKey.rawRepresentation)
        #expect(jwk["kid"] == IdentityAssertion.keyID(of: rebuilt))
        #expect(IdentityAssertion.publicKeys(jwkSet: Data("garbage".utf8)).isEmpty)
        #expect(IdentityAssertion.keyID(of: P256.Signing.PrivateKey().publicKey) != jwk["kid"])
    }

    @Test func keysAreAnnouncedBeforeTheySignAndKeptUntilTheirLastAssertionsExpire() {
        let day: TimeInterval = 86_400
        let schedule = AssertionKeySchedule(rotation: 30 * day, announcement: 3600, retention: 600)
        let start = Self.now
        typealias Key = AssertionKeySchedule.Key
        // No key yet: the first signs at once.
        let first = Key(generation: 1, signsFrom: start)
        #expect(schedule.next([], now: start) == first)
        #expect(schedule.next([first], now: start.addingTimeInterval(29 * day)) == nil)
        // An hour before its 30 days, the next is made, published, and not used yet.
        let due = start.addingTimeInterval(30 * day - 3600)
        let second = Key(generation: 2, signsFrom: start.addingTimeInterval(30 * day))
        #expect(schedule.next([first], now: due) == second)
        #expect(schedule.signing([first, second], now: due) == first)
        #expect(schedule.published([first, second], now: due) == [first, second])
        #expect(schedule.next([first, second], now: due.addingTimeInterval(60)) == nil)  // made once
        // It signs from its time; the old one stays published for the retention, then is retired.
        let switched = second.signsFrom
        #expect(schedule.signing([first, second], now: switched) == second)
        #expect(schedule.published([first, second], now: switched.addingTimeInterval(599)) == [first, second])
        #expect(schedule.retired([first, second], now: switched.addingTimeInterval(600)) == [first])
        #expect(schedule.published([first, second], now: switched.addingTimeInterval(600)) == [second])
        // A gateway that was down past a rotation makes the next key with a full announcement.
        let late = start.addingTimeInterval(45 * day)
        #expect(schedule.next([first], now: late) == Key(generation: 2, signsFrom: late.addingTimeInterval(3600)))
    }
}
