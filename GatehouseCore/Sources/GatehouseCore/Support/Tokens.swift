import Crypto
import Foundation

/// Unguessable identifiers from a secure random source (`SecureRandom`).
public enum RandomToken {
    public static func make(bytes count: Int = 32) -> String {
        // One draw for the whole token, encoded straight from it: a nonce is made for every page that gets the bar.
        withUnsafeTemporaryAllocation(byteCount: count, alignment: 1) { bytes in
            SecureRandom.fill(bytes)
            return Base64URL.encode(UnsafeRawBufferPointer(bytes))
        }
    }
}

public enum Base64URL {
    public static func encode(_ data: Data) -> String {
        data.withUnsafeBytes { encode($0) }
    }

    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Base64 with the URL-safe alphabet and no padding (RFC 4648 §5), written in one pass.
    public static func encode(_ bytes: UnsafeRawBufferPointer) -> String {
        String(unsafeUninitializedCapacity: (bytes.count * 4 + 2) / 3) { output in
            var written = 0
            func put(_ value: UInt32, _ characters: Int) {
                var shift: UInt32 = 18
                for _ in 0..<characters {
                    output[written] = alphabet[Int((value >> shift) & 63)]
                    written += 1
                    shift &-= 6
                }
            }
            var index = 0
            while index + 3 <= bytes.count {
                put(UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2]), 4)
                index += 3
            }
            switch bytes.count - index {
            case 1: put(UInt32(bytes[index]) << 16, 2)
            case 2: put(UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8, 3)
            default: break
            }
            return written
        }
    }

    public static func decode(_ string: String) -> Data? {
        var base64 = string.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        guard !base64.contains("=") else { return nil }
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64)
    }
}

/// Compares secrets without an early exit, so timing tells nothing about where they differ.
public func constantTimeEquals(_ lhs: String, _ rhs: String) -> Bool {
    let (a, b) = (Array(lhs.utf8), Array(rhs.utf8))
    guard a.count == b.count else { return false }
    return zip(a, b).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
}

/// What the store keeps of a secret the browser holds (a session cookie, a handoff code, an app grant, a sign-in's
/// browser binding): its SHA-256 in hex, so that the store never holds a usable secret.
public enum TokenHash {
    public static func hex(_ value: String) -> String {
        // Hashed from the string's own bytes, without a copy: every request with a session cookie asks this.
        var hasher = SHA256()
        var value = value
        value.withUTF8 { hasher.update(bufferPointer: UnsafeRawBufferPointer($0)) }
        return hasher.finalize().withUnsafeBytes { String(lowerHex: $0) }
    }
}
