import Crypto
import Foundation

/// Proof Key for Code Exchange (RFC 7636), S256 only.
public struct PKCE: Sendable, Equatable {
    public let verifier: String
    public var challenge: String { Self.challenge(for: verifier) }
    public static let method = "S256"

    public init(verifier: String) { self.verifier = verifier }

    /// A verifier of 43 characters from 32 random bytes.
    public static func generate() -> PKCE { PKCE(verifier: RandomToken.make(bytes: 32)) }

    public static func challenge(for verifier: String) -> String {
        Base64URL.encode(Data(SHA256.hash(data: Data(verifier.utf8))))
    }

    /// RFC 7636 §4.1: 43–128 characters from the unreserved set.
    public static func isValidVerifier(_ verifier: String) -> Bool {
        (43...128).contains(verifier.utf8.count)
            && verifier.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                    || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_")
                    || byte == UInt8(ascii: "~")
            }
    }
}

/// Unguessable identifiers from the system's secure random source.
public enum RandomToken {
    public static func make(bytes count: Int = 32) -> String {
        // Eight bytes per draw from the system's generator, not one.
        var generator = SystemRandomNumberGenerator()
        var bytes = Data(count: (count + 7) / 8 * 8)
        bytes.withUnsafeMutableBytes { raw in
            for offset in stride(from: 0, to: raw.count, by: 8) { raw.storeBytes(of: generator.next(), toByteOffset: offset, as: UInt64.self) }
        }
        return Base64URL.encode(bytes.prefix(count))
    }
}

public enum Base64URL {
    public static func encode(_ data: Data) -> String {
        // Byte by byte rather than three string replacements: this runs for every nonce and session id.
        var bytes = Array(data.base64EncodedData())
        while bytes.last == UInt8(ascii: "=") { bytes.removeLast() }
        for index in bytes.indices {
            if bytes[index] == UInt8(ascii: "+") {
                bytes[index] = UInt8(ascii: "-")
            } else if bytes[index] == UInt8(ascii: "/") {
                bytes[index] = UInt8(ascii: "_")
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    public static func decode(_ string: String) -> Data? {
        var base64 = string.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        guard !base64.contains("=") else { return nil }
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64)
    }
}

/// Compares secrets without an early exit, so timing tells nothing about where they differ.
func constantTimeEquals(_ lhs: String, _ rhs: String) -> Bool {
    let (a, b) = (Array(lhs.utf8), Array(rhs.utf8))
    guard a.count == b.count else { return false }
    return zip(a, b).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
}
