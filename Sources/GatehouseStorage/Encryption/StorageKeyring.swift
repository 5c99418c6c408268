import Crypto
import Foundation
import GatehouseCore

/// The keys that seal the store's secrets (tokens, cookie jars, personal data) with AES-256-GCM.
///
/// The first key seals; every key opens, so that a key can be replaced without losing what the old one sealed:
/// the operator puts a new key first, keeps the old one after it, runs `gatehouse storage reseal` (or lets the
/// gateway's start reseal), then drops the old key. Each sealed value names the key that sealed it (the first
/// eight hex digits of the key's SHA-256), and carries the row it belongs to as associated data: a value copied
/// into another row does not open.
///
/// A sealed value is text: `gh1:<key id>:<base64 of nonce, ciphertext and tag>`.
public struct StorageKeyring: Sendable {
    public struct Key: Sendable {
        public let id: String
        let key: SymmetricKey
    }

    /// The sealing key first.
    public let keys: [Key]
    /// The key of values that are looked up by an equal value (a phone number's send count): HMAC-SHA-256 under a key
    /// derived from the sealing key. Such values are short-lived; after a key change the old ones no longer match.
    private let lookupKey: SymmetricKey

    public static let keyBytes = 32
    static let prefix = "gh1:"

    public init(keys: [SymmetricKey]) throws {
        guard let first = keys.first else { throw StorageKeyError.missing }
        guard keys.allSatisfy({ $0.bitCount == Self.keyBytes * 8 }) else { throw StorageKeyError.wrongLength }
        self.keys = keys.map { key in
            Key(id: key.withUnsafeBytes { String(SHA256.hash(data: Data($0)).withUnsafeBytes { String(lowerHex: $0) }.prefix(8)) }, key: key)
        }
        lookupKey = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: first, info: Data("gatehouse storage look-up".utf8), outputByteCount: Self.keyBytes)
    }

    /// Keys as a key file or `GATEHOUSE_STORAGE_ENCRYPTION_KEY` gives them: each the base64 of 32 random bytes
    /// (`openssl rand -base64 32`), separated by new lines, spaces or commas, the sealing key first; lines starting with
    /// `#` are comments.
    public static func parse(_ text: String) throws -> StorageKeyring {
        let words = text.split(separator: "\n")
            .filter { !$0.trimmingCharacters(in: .whitespaces).hasPrefix("#") }
            .flatMap { $0.split(whereSeparator: { $0 == " " || $0 == "," || $0 == "\t" || $0 == "\r" }) }
        let keys = try words.map { word -> SymmetricKey in
            guard let bytes = Data(base64Encoded: String(word)) else { throw StorageKeyError.notBase64 }
            guard bytes.count == keyBytes else { throw StorageKeyError.wrongLength }
            return SymmetricKey(data: bytes)
        }
        return try StorageKeyring(keys: keys)
    }

    /// A new key as a key file holds it.
    public static func newKeyText() -> String {
        SymmetricKey(size: .bits256).withUnsafeBytes { Data($0).base64EncodedString() } + "\n"
    }

    public var sealingKeyID: String { keys[0].id }

    public static func isSealed(_ text: String) -> Bool { text.hasPrefix(prefix) }

    /// The id of the key that sealed `text`, if it is a sealed value.
    public static func keyID(of text: String) -> String? {
        guard isSealed(text) else { return nil }
        return text.dropFirst(prefix.count).split(separator: ":", maxSplits: 1).first.map(String.init)
    }

    /// `plaintext` sealed with the sealing key for the row `context` names (`"sessions:<id>"`).
    public func seal(_ plaintext: String, context: String) throws -> String {
        do {
            let box = try AES.GCM.seal(Data(plaintext.utf8), using: keys[0].key, authenticating: Data(context.utf8))
            guard let combined = box.combined else { throw StorageError.corrupt("AES-GCM gave no combined box") }
            return Self.prefix + keys[0].id + ":" + combined.base64EncodedString()
        } catch let error as StorageError {
            throw error
        } catch {
            throw StorageError.corrupt("cannot seal a value for \(context): \(error)")
        }
    }

    /// The plaintext of a value sealed for `context`, under whichever kept key sealed it. A value of another row, a
    /// changed value or one sealed with a key no longer kept is `StorageError.corrupt`.
    public func open(_ sealed: String, context: String) throws -> String {
        let parts = sealed.dropFirst(Self.prefix.count).split(separator: ":", maxSplits: 1)
        guard Self.isSealed(sealed), parts.count == 2, let combined = Data(base64Encoded: String(parts[1])) else {
            throw StorageError.corrupt("\(context): not a sealed value")
        }
        guard let key = keys.first(where: { $0.id == parts[0] }) else {
            throw StorageError.corrupt("\(context): sealed with key \(parts[0]), which is not among storage.encryption_key's keys")
        }
        do {
            let plaintext = try AES.GCM.open(AES.GCM.SealedBox(combined: combined), using: key.key, authenticating: Data(context.utf8))
            return String(decoding: plaintext, as: UTF8.self)
        } catch {
            throw StorageError.corrupt("\(context): the sealed value does not open (changed, or copied from another row)")
        }
    }

    public static func isLookupHash(_ text: String) -> Bool { text.hasPrefix(lookupPrefix) }
    static let lookupPrefix = "gh1h:"

    /// The text a looked-up value is stored as: equal values give equal text, and the text does not give the value
    /// back (a phone number's few digits cannot be tried one by one without the key).
    /// 32 bytes for another use of the gateway's (`label` names it: the Web Push key), derived from the sealing key:
    /// the same on every replica, and another after a key change.
    public func derivedKey(_ label: String) -> Data {
        HKDF<SHA256>.deriveKey(inputKeyMaterial: keys[0].key, info: Data(label.utf8), outputByteCount: Self.keyBytes).withUnsafeBytes { Data($0) }
    }

    public func lookupHash(_ value: String) -> String {
        Self.lookupPrefix + Data(HMAC<SHA256>.authenticationCode(for: Data(value.utf8), using: lookupKey)).base64EncodedString()
    }
}

/// What is wrong with the keys the configuration gives.
public enum StorageKeyError: Error, Equatable, CustomStringConvertible {
    case missing
    case notBase64
    case wrongLength

    public var description: String {
        switch self {
        case .missing: "no key is given"
        case .notBase64: "a key is not base64 (make one with `openssl rand -base64 32`)"
        case .wrongLength: "a key is not 32 bytes (256 bits; make one with `openssl rand -base64 32`)"
        }
    }
}
