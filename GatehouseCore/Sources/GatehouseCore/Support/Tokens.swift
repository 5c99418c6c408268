import Crypto
import Foundation

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
public func constantTimeEquals(_ lhs: String, _ rhs: String) -> Bool {
    let (a, b) = (Array(lhs.utf8), Array(rhs.utf8))
    guard a.count == b.count else { return false }
    return zip(a, b).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
}

/// What the store keeps of a secret the browser holds (a session cookie, a handoff code, an app grant, a sign-in's
/// browser binding): its SHA-256 in hex, so that the store never holds a usable secret.
public enum TokenHash {
    public static func hex(_ value: String) -> String {
        var hex: [UInt8] = []
        hex.reserveCapacity(64)
        for byte in SHA256.hash(data: Data(value.utf8)) { hex.appendHex(byte) }
        return String(decoding: hex, as: UTF8.self)
    }
}
