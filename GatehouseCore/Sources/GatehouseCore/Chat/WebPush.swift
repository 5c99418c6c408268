import Crypto
import Foundation

/// Web Push as an application server sends it: a message encrypted for one browser's subscription (RFC 8291, over
/// RFC 8188's `aes128gcm` content coding, in one record) and signed for the push service with the server's VAPID key
/// (RFC 8292). The push service only relays bytes it cannot read; the browser's service worker opens them.
public enum WebPush {
    /// A browser's subscription, as `PushSubscription.toJSON()` gives it: the push service's URL, the browser's P-256
    /// public key (`p256dh`, 65 bytes uncompressed) and its authentication secret (`auth`, 16 bytes).
    public struct Subscription: Sendable, Equatable, Codable {
        public var endpoint: String
        public var p256dh: Data
        public var auth: Data

        public init(endpoint: String, p256dh: Data, auth: Data) {
            self.endpoint = endpoint
            self.p256dh = p256dh
            self.auth = auth
        }

        /// From the browser's JSON (`keys.p256dh` and `keys.auth` in base64url, padded or not); `nil` when a key is
        /// missing, of the wrong length, or not a point of the curve.
        public init?(endpoint: String, p256dh: String, auth: String) {
            func bytes(_ text: String) -> Data? {
                var trimmed = Substring(text)
                while trimmed.hasSuffix("=") { trimmed = trimmed.dropLast() }
                return Base64URL.decode(String(trimmed))
            }
            guard let key = bytes(p256dh), key.count == 65, (try? P256.KeyAgreement.PublicKey(x963Representation: key)) != nil,
                let secret = bytes(auth), secret.count == 16
            else { return nil }
            self.init(endpoint: endpoint, p256dh: key, auth: secret)
        }
    }

    public enum Failure: Error, Equatable {
        /// The subscription's key is no point of P-256.
        case invalidKey
        /// More than one record holds (`maximumPlaintext`).
        case tooLarge(Int)
    }

    /// The record size the header names; one record carries the whole message.
    public static let recordSize = 4096
    /// What one record holds: its size less the header (salt 16, record size 4, key id length 1, key 65), the tag
    /// (16) and the padding delimiter (1). Every push service takes a message of 4096 bytes (RFC 8030 §7.2).
    public static let maximumPlaintext = recordSize - 86 - 16 - 1

    /// `plaintext` encrypted for `subscription`: the `aes128gcm` body, its header naming the server's one-time public
    /// key. `salt` and `serverKey` are fresh for every message (given only by tests, for the RFC's example).
    public static func encrypt(
        _ plaintext: Data, for subscription: Subscription, salt: Data = randomBytes(16), serverKey: P256.KeyAgreement.PrivateKey = .init()
    ) throws -> Data {
        guard plaintext.count <= maximumPlaintext else { throw Failure.tooLarge(plaintext.count) }
        guard let browserKey = try? P256.KeyAgreement.PublicKey(x963Representation: subscription.p256dh) else { throw Failure.invalidKey }
        let serverPublic = serverKey.publicKey.x963Representation
        let (contentKey, nonce) = try keys(
            shared: serverKey.sharedSecretFromKeyAgreement(with: browserKey), browserKey: subscription.p256dh, serverKey: serverPublic,
            auth: subscription.auth, salt: salt)
        // The last (and only) record ends with the delimiter 2 and no padding.
        let sealed = try AES.GCM.seal(plaintext + [2], using: contentKey, nonce: nonce)
        var body = salt
        withUnsafeBytes(of: UInt32(recordSize).bigEndian) { body.append(contentsOf: $0) }
        body.append(UInt8(serverPublic.count))
        body.append(serverPublic)
        body.append(sealed.ciphertext)
        body.append(sealed.tag)
        return body
    }

    /// What the browser does with a body: the message, opened with the subscription's private key and secret (for
    /// tests, and for a push service stand-in); `nil` when it does not open.
    public static func decrypt(_ body: Data, key: P256.KeyAgreement.PrivateKey, auth: Data) -> Data? {
        let bytes = [UInt8](body)
        guard bytes.count > 21, bytes.count >= 21 + Int(bytes[20]) + 17 else { return nil }
        let salt = Data(bytes[0..<16]), serverKey = Data(bytes[21..<21 + Int(bytes[20])]), record = Data(bytes[(21 + Int(bytes[20]))...])
        guard let server = try? P256.KeyAgreement.PublicKey(x963Representation: serverKey), let shared = try? key.sharedSecretFromKeyAgreement(with: server),
            let (contentKey, nonce) = try? keys(shared: shared, browserKey: key.publicKey.x963Representation, serverKey: serverKey, auth: auth, salt: salt),
            let box = try? AES.GCM.SealedBox(nonce: nonce, ciphertext: record.dropLast(16), tag: record.suffix(16)),
            let opened = try? AES.GCM.open(box, using: contentKey), opened.last == 2
        else { return nil }
        return opened.dropLast()
    }

    /// RFC 8291 §3.3–3.4: the input key from the shared secret under the browser's secret and both public keys, then
    /// (RFC 8188 §2.2–2.3) the content key and the nonce under the message's salt.
    static func keys(shared: SharedSecret, browserKey: Data, serverKey: Data, auth: Data, salt: Data) throws -> (SymmetricKey, AES.GCM.Nonce) {
        let keyInfo = Data("WebPush: info".utf8) + [0] + browserKey + serverKey
        let inputKey = shared.hkdfDerivedSymmetricKey(using: SHA256.self, salt: auth, sharedInfo: keyInfo, outputByteCount: 32)
        let contentKey = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: inputKey, salt: salt, info: Data("Content-Encoding: aes128gcm".utf8) + [0], outputByteCount: 16)
        let nonce = HKDF<SHA256>.deriveKey(inputKeyMaterial: inputKey, salt: salt, info: Data("Content-Encoding: nonce".utf8) + [0], outputByteCount: 12)
        return (contentKey, try AES.GCM.Nonce(data: nonce.withUnsafeBytes { Data($0) }))
    }

    public static func randomBytes(_ count: Int) -> Data {
        var data = Data(count: count)
        data.withUnsafeMutableBytes { SecureRandom.fill($0) }
        return data
    }
}

/// The gateway's identity to the push services (VAPID, RFC 8292): a P-256 key whose public half the browser is given
/// when it subscribes (`applicationServerKey`), and a short-lived ES256 JWT for each push service origin, signed with it.
public struct VAPID: Sendable {
    public let key: P256.Signing.PrivateKey
    /// Whom the push service may contact about the pushes (`sub`): a `mailto:` or `https:` URL.
    public let subject: String

    /// The longest a token may last (RFC 8292 §2: no more than 24 hours).
    public static let lifetime: TimeInterval = 12 * 3600

    public init(key: P256.Signing.PrivateKey, subject: String) {
        self.key = key
        self.subject = subject
    }

    /// The key derived from 32 bytes of secret keying material (the same on every replica that shares it): the first
    /// HKDF output that is a valid scalar of the curve (all but one in 2³² are).
    public init(keyMaterial: Data, subject: String) {
        var counter: UInt8 = 0
        while true {
            let bytes = HKDF<SHA256>.deriveKey(
                inputKeyMaterial: SymmetricKey(data: keyMaterial), info: Data("gatehouse vapid key".utf8) + [counter], outputByteCount: 32)
            if let key = try? P256.Signing.PrivateKey(rawRepresentation: bytes.withUnsafeBytes { Data($0) }) {
                self.init(key: key, subject: subject)
                return
            }
            counter &+= 1
        }
    }

    /// The public key as browsers take it (`applicationServerKey`): uncompressed, in base64url.
    public var publicKey: String { Base64URL.encode(key.publicKey.x963Representation) }

    /// The push service's origin, the token's audience: `https://push.example` (a port only when not the default).
    public static func audience(of endpoint: URL) -> String? {
        guard let scheme = endpoint.scheme?.lowercased(), let host = endpoint.host?.lowercased(), !host.isEmpty else { return nil }
        let port = endpoint.port.flatMap { ($0 == 443 && scheme == "https") || ($0 == 80 && scheme == "http") ? nil : $0 }
        return "\(scheme)://\(host)" + (port.map { ":\($0)" } ?? "")
    }

    /// The `Authorization` header of a push to `endpoint` (`vapid t=<JWT>, k=<public key>`, RFC 8292 §3).
    public func authorization(for endpoint: URL, now: Date) throws -> String {
        guard let audience = Self.audience(of: endpoint) else { throw WebPush.Failure.invalidKey }
        let header = try JSONSerialization.data(withJSONObject: ["typ": "JWT", "alg": "ES256"], options: [.sortedKeys])
        let claims = try JSONSerialization.data(
            withJSONObject: ["aud": audience, "exp": Int(now.timeIntervalSince1970 + Self.lifetime), "sub": subject],
            options: [.sortedKeys, .withoutEscapingSlashes])
        let signingInput = Base64URL.encode(header) + "." + Base64URL.encode(claims)
        let signature = try key.signature(for: Data(signingInput.utf8))
        return "vapid t=\(signingInput).\(Base64URL.encode(signature.rawRepresentation)), k=\(publicKey)"
    }
}

/// The push services the gateway may send to (an allowlist like the apps'): a subscription whose endpoint names any
/// other host is refused, so that a member's browser cannot make the gateway post to an address of its choosing.
/// Each entry is an origin, `https://fcm.googleapis.com`, or one with a leading `*.` for every host under a domain
/// (`https://*.notify.windows.com`); `http:` only as the operator writes it (a test's stand-in on loopback).
public struct PushServices: Sendable, Equatable {
    public struct Entry: Sendable, Equatable {
        public var scheme: String
        public var host: String
        public var port: Int
        public var anySubdomain: Bool
    }

    public let entries: [Entry]

    /// The services of the browsers members use: Chrome and Edge's (FCM), Firefox's, Safari's and Windows'.
    public static let browsers = [
        "https://fcm.googleapis.com", "https://updates.push.services.mozilla.com", "https://web.push.apple.com", "https://*.notify.windows.com",
    ]
    /// The longest endpoint taken (the services' are about 200 characters).
    public static let maximumEndpoint = 1024

    /// `nil` when an entry is not an origin.
    public init?(_ origins: [String]) {
        var entries: [Entry] = []
        for origin in origins {
            guard let components = URLComponents(string: origin), let scheme = components.scheme?.lowercased(), scheme == "https" || scheme == "http",
                var host = components.host?.lowercased(), !host.isEmpty, components.user == nil, components.path.isEmpty || components.path == "/",
                components.query == nil
            else { return nil }
            let anySubdomain = host.hasPrefix("*.")
            if anySubdomain { host.removeFirst(2) }
            guard !host.isEmpty, !host.contains("*") else { return nil }
            entries.append(Entry(scheme: scheme, host: host, port: components.port ?? (scheme == "https" ? 443 : 80), anySubdomain: anySubdomain))
        }
        self.entries = entries
    }

    /// The endpoint as a URL when one entry allows it: its scheme, host and port, no user or password, a path.
    public func allowed(_ endpoint: String) -> URL? {
        guard endpoint.utf8.count <= Self.maximumEndpoint, let components = URLComponents(string: endpoint),
            let scheme = components.scheme?.lowercased(), let host = components.host?.lowercased(), !host.isEmpty,
            components.user == nil, components.password == nil, components.fragment == nil, !components.path.isEmpty,
            let url = components.url
        else { return nil }
        let port = components.port ?? (scheme == "https" ? 443 : 80)
        let listed = entries.contains { entry in
            entry.scheme == scheme && entry.port == port && (entry.anySubdomain ? host.hasSuffix("." + entry.host) : host == entry.host)
        }
        return listed ? url : nil
    }
}
