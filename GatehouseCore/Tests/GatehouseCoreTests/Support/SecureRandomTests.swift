import Foundation
import Testing

@testable import GatehouseCore

/// The per-thread generator behind nonces, trace ids and tokens: ChaCha20 as RFC 8439 gives it, and output that never
/// repeats across draws, refills, reseeds or threads.
@Suite struct SecureRandomTests {
    /// RFC 8439 §2.3.2: the block for key 00…1f, counter 1 and nonce 00:00:00:09:00:00:00:4a:00:00:00:00.
    @Test func theBlockFunctionIsRFC8439s() {
        let key = UnsafeMutablePointer<UInt32>.allocate(capacity: 8)
        defer { key.deallocate() }
        for word in 0..<8 {
            let bytes = (0..<4).map { UInt32(word * 4 + $0) }
            key[word] = bytes[0] | bytes[1] << 8 | bytes[2] << 16 | bytes[3] << 24
        }
        var block = [UInt8](repeating: 0, count: 64)
        block.withUnsafeMutableBytes { ChaCha20.block(key: key, counter: 1, nonce: (0x0900_0000, 0x4a00_0000, 0), into: $0.baseAddress!) }
        let expected =
            "10f1e7e4d13b5915500fdd1fa32071c4c7d1f4c733c068030422aa9ac3d46c4e"
            + "d2826446079faa0914c2d705d98b02a2b5129cd1de164eb9cbd083e8a2503c4e"
        #expect(block.map { String(format: "%02x", $0) }.joined() == expected)
    }

    /// Draws of every size, across many refills and a reseed, are all different, and their bytes spread over every
    /// value (a stuck or zeroed generator would repeat or skew).
    @Test func drawsNeverRepeatAcrossRefillsAndReseeds() {
        var seen = Set<[UInt8]>()
        var counts = [Int](repeating: 0, count: 256)
        let draws = KeyErasureGenerator.reseedInterval * KeyErasureGenerator.refillBytes / 16 + 100
        for draw in 0..<draws {
            var bytes = [UInt8](repeating: 0, count: 16 + draw % 3)
            bytes.withUnsafeMutableBytes { SecureRandom.fill($0) }
            #expect(seen.insert(bytes).inserted)
            for byte in bytes { counts[Int(byte)] += 1 }
        }
        let mean = Double(counts.reduce(0, +)) / 256
        #expect(counts.allSatisfy { abs(Double($0) - mean) < mean * 0.2 })
    }

    /// A draw larger than a refill is filled whole, and threads get streams of their own.
    @Test func largeDrawsAndThreadsGetTheirOwnBytes() async {
        var large = [UInt8](repeating: 0, count: 5000)
        large.withUnsafeMutableBytes { SecureRandom.fill($0) }
        #expect(large.suffix(600).contains { $0 != 0 })
        let tokens = await withTaskGroup(of: [String].self) { group in
            for _ in 0..<4 { group.addTask { (0..<200).map { _ in RandomToken.make() } } }
            return await group.reduce(into: [String]()) { $0 += $1 }
        }
        #expect(Set(tokens).count == tokens.count)
        #expect(TraceContext.start().traceID != TraceContext.start().traceID)
    }
}
