import CGatehouseZlib
import GatehouseCore

/// The gzip member (RFC 1952) around a page the gateway compresses, written by the gateway around zlib's raw deflate
/// stream so that its header can carry the BREACH padding: an extra field of 0–32 random bytes, which every gzip
/// reader skips. What the browser inflates is the rewritten page exactly: the padding adds no node to any document,
/// and a fragment an app's script fetches keeps its bytes.
struct GzipFrame {
    private var crc: UInt32 = 0
    private var size: UInt32 = 0
    private var started = false

    /// The member's header the first time (before the first compressed bytes), nothing after.
    mutating func headerIfFirst() -> [UInt8] {
        guard !started else { return [] }
        started = true
        return Self.header()
    }

    /// The member's header: `FEXTRA` with one subfield (`Gh`) of 0–32 random bytes, the fastest level's `XFL`, no name
    /// or time.
    static func header() -> [UInt8] {
        var generator = SecureRandom()
        let length = Int.random(in: 0...maximumPadding, using: &generator)
        var bytes: [UInt8] = [0x1F, 0x8B, 8, flagExtra, 0, 0, 0, 0, fastestLevel, unknownSystem]
        bytes.reserveCapacity(bytes.count + 6 + length)
        bytes += littleEndian16(4 + length) + [UInt8(ascii: "G"), UInt8(ascii: "h")] + littleEndian16(length)
        for _ in 0..<length { bytes.append(UInt8.random(in: 0...255, using: &generator)) }
        return bytes
    }

    static let maximumPadding = 32
    private static let flagExtra: UInt8 = 0x04
    private static let fastestLevel: UInt8 = 4
    private static let unknownSystem: UInt8 = 255

    /// Counts `bytes` into the trailer: the uncompressed data's CRC-32 and length.
    mutating func add(_ bytes: [UInt8]) {
        crc = bytes.withUnsafeBufferPointer { gatehouse_crc32(crc, $0.baseAddress, $0.count) }
        size &+= UInt32(truncatingIfNeeded: bytes.count)
    }

    /// The member's last eight bytes.
    var trailer: [UInt8] {
        [UInt8](unsafeUninitializedCapacity: 8) { buffer, count in
            for index in 0..<4 {
                buffer[index] = UInt8(truncatingIfNeeded: crc >> (8 * index))
                buffer[4 + index] = UInt8(truncatingIfNeeded: size >> (8 * index))
            }
            count = 8
        }
    }

    private static func littleEndian16(_ value: Int) -> [UInt8] {
        [UInt8(truncatingIfNeeded: value), UInt8(truncatingIfNeeded: value >> 8)]
    }
}
