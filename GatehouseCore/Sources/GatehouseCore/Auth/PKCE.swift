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
