import Crypto
import Foundation
import Testing

@testable import GatehouseCore

/// Web Push as the RFCs give it: RFC 8291's worked example byte for byte, a message the browser's key opens and no
/// other does, the VAPID token the push service checks, and the push services' allowlist with hostile endpoints.
@Suite struct WebPushTests {
    static func bytes(_ text: String) throws -> Data { try #require(Base64URL.decode(text)) }

    /// RFC 8291 Appendix A: the same keys and salt give the same body.
    @Test func theRFCsExampleComesOutByteForByte() throws {
        let serverKey = try P256.KeyAgreement.PrivateKey(rawRepresentation: Self.bytes("yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw"))
        #expect(
            Base64URL.encode(serverKey.publicKey.x963Representation)
                == "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8")
        let subscription = try #require(
            WebPush.Subscription(
                endpoint: "https://push.example.net/push/JzLQ3raZJfFBR0aqvOMsLrt54w4rJUsV",
                p256dh: "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4", auth: "BTBZMqHH6r4Tts7J_aSIgg"))
        let body = try WebPush.encrypt(
            Data("When I grow up, I want to be a watermelon".utf8), for: subscription, salt: Self.bytes("DGv6ra1nlYgDCS1FRnbzlw"), serverKey: serverKey)
        #expect(
            Base64URL.encode(body)
                == "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_"
                + "yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN")
    }

    /// A fresh salt and key each time: two bodies of one message differ, and each is as long as the header, the
    /// message, its delimiter and the tag.
    @Test func everyMessageHasItsOwnSaltAndKey() throws {
        let browser = P256.KeyAgreement.PrivateKey()
        let subscription = WebPush.Subscription(endpoint: "https://push.example/x", p256dh: browser.publicKey.x963Representation, auth: WebPush.randomBytes(16))
        let first = try WebPush.encrypt(Data("hello".utf8), for: subscription)
        let second = try WebPush.encrypt(Data("hello".utf8), for: subscription)
        #expect(first != second)
        #expect(first.prefix(16) != second.prefix(16))
        #expect(first.count == 86 + 5 + 1 + 16)
        #expect(Array(first[16..<21]) == [0, 0, 16, 0, 65])
        // The browser's key opens each; another key, or a body changed by one bit, opens none.
        #expect(WebPush.decrypt(first, key: browser, auth: subscription.auth) == Data("hello".utf8))
        #expect(WebPush.decrypt(second, key: browser, auth: subscription.auth) == Data("hello".utf8))
        #expect(WebPush.decrypt(first, key: P256.KeyAgreement.PrivateKey(), auth: subscription.auth) == nil)
        #expect(WebPush.decrypt(first, key: browser, auth: WebPush.randomBytes(16)) == nil)
        var flipped = first
        flipped[flipped.count - 20] ^= 1
        #expect(WebPush.decrypt(flipped, key: browser, auth: subscription.auth) == nil)
        #expect(WebPush.decrypt(first.prefix(40), key: browser, auth: subscription.auth) == nil)
    }

    @Test func aMessageTooLongForOneRecordIsRefused() throws {
        let subscription = WebPush.Subscription(
            endpoint: "https://push.example/x", p256dh: P256.KeyAgreement.PrivateKey().publicKey.x963Representation, auth: WebPush.randomBytes(16))
        #expect(throws: WebPush.Failure.tooLarge(4000)) { try WebPush.encrypt(Data(count: 4000), for: subscription) }
        #expect(try WebPush.encrypt(Data(count: WebPush.maximumPlaintext), for: subscription).count == WebPush.recordSize)
    }

    /// What a browser sends, and what is not a subscription: keys missing, too short, padded, not on the curve.
    @Test(arguments: [
        ("BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4", "BTBZMqHH6r4Tts7J_aSIgg", true),
        ("BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4=", "BTBZMqHH6r4Tts7J_aSIgg==", true),
        ("BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4", "BTBZMqHH6r4Tts7J_aSI", false),
        ("BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORdxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4", "BTBZMqHH6r4Tts7J_aSIgg", false),
        ("BAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "BTBZMqHH6r4Tts7J_aSIgg", false),
        ("", "", false),
        ("not base64!", "BTBZMqHH6r4Tts7J_aSIgg", false),
    ])
    func subscriptionKeys(p256dh: String, auth: String, valid: Bool) {
        #expect((WebPush.Subscription(endpoint: "https://push.example/x", p256dh: p256dh, auth: auth) != nil) == valid)
    }

    /// The token names the push service's origin, lasts 12 hours at most, and verifies with the key the browser was
    /// given; the key derived from the same material is the same on every replica.
    @Test func theVAPIDTokenIsWhatThePushServiceChecks() throws {
        let material = Data(repeating: 7, count: 32)
        let vapid = VAPID(keyMaterial: material, subject: "mailto:ops@example.org")
        #expect(VAPID(keyMaterial: material, subject: "x").publicKey == vapid.publicKey)
        #expect(VAPID(keyMaterial: Data(repeating: 8, count: 32), subject: "x").publicKey != vapid.publicKey)
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let header = try vapid.authorization(for: try #require(URL(string: "https://fcm.googleapis.com:443/fcm/send/abc?x=1")), now: now)
        let match = try #require(header.wholeMatch(of: /vapid t=([^,]+), k=([A-Za-z0-9_-]+)/))
        #expect(String(match.2) == vapid.publicKey)
        let parts = match.1.split(separator: ".").map(String.init)
        #expect(parts.count == 3)
        let claims = try #require(try JSONSerialization.jsonObject(with: Self.bytes(parts[1])) as? [String: Any])
        #expect(claims["aud"] as? String == "https://fcm.googleapis.com")
        #expect(claims["sub"] as? String == "mailto:ops@example.org")
        #expect(claims["exp"] as? Int == 1_800_000_000 + 12 * 3600)
        let publicKey = try P256.Signing.PublicKey(x963Representation: Self.bytes(String(match.2)))
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: Self.bytes(parts[2]))
        #expect(publicKey.isValidSignature(signature, for: Data((parts[0] + "." + parts[1]).utf8)))
        #expect(VAPID.audience(of: try #require(URL(string: "http://127.0.0.1:8123/push/1"))) == "http://127.0.0.1:8123")
    }

    /// Only the listed services, as listed: no other host, scheme or port, no credentials, nothing hidden before an
    /// `@`, no lookalike suffix.
    @Test(arguments: [
        ("https://fcm.googleapis.com/fcm/send/abc:def", true),
        ("https://FCM.googleapis.com:443/wp/abc", true),
        ("https://db5p.notify.windows.com/w/?token=abc", true),
        ("https://notify.windows.com/w/", false),
        ("https://evilnotify.windows.com/w/", false),
        ("https://fcm.googleapis.com.evil.example/fcm/send/abc", false),
        ("https://evil.example/fcm.googleapis.com/", false),
        ("https://fcm.googleapis.com@evil.example/x", false),
        ("https://user:pass@fcm.googleapis.com/x", false),
        ("http://fcm.googleapis.com/fcm/send/abc", false),
        ("https://fcm.googleapis.com:8443/fcm/send/abc", false),
        ("https://127.0.0.1/x", false),
        ("javascript:alert(1)", false),
        ("file:///etc/passwd", false),
        ("https://fcm.googleapis.com", false),
        ("", false),
        ("http://127.0.0.1:9/stand-in/1", true),
        ("http://127.0.0.1:10/stand-in/1", false),
    ])
    func pushServices(endpoint: String, allowed: Bool) throws {
        let services = try #require(PushServices(PushServices.browsers + ["http://127.0.0.1:9"]))
        #expect((services.allowed(endpoint) != nil) == allowed)
        #expect(services.allowed("https://fcm.googleapis.com/" + String(repeating: "a", count: 1100)) == nil)
    }

    @Test func aServiceThatIsNoOriginIsRefused() {
        #expect(PushServices(["https://fcm.googleapis.com/path"]) == nil)
        #expect(PushServices(["ftp://push.example"]) == nil)
        #expect(PushServices(["https://*"]) == nil)
        #expect(PushServices(["https://a.*.example"]) == nil)
        #expect(PushServices(PushServices.browsers) != nil)
    }
}
