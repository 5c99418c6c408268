import Foundation

/// Secure random bytes without a system call for each: a ChaCha20 generator per thread, keyed from the system's
/// source (`arc4random_buf`, the kernel's `getrandom`) and keyed again from it every `reseedInterval` refills, in
/// the "fast key erasure" construction (D. J. Bernstein, 2017) that the kernel's own `getrandom` and OpenBSD's
/// `arc4random` use: each refill makes eight ChaCha20 blocks, the first 32 bytes become the next key at once and the
/// bytes handed out are wiped, so what the generator holds never tells earlier output. Every proxied request takes
/// a nonce and trace ids from it: asking the kernel for each (four `getrandom` calls per request) cost more than the
/// rest of the request's randomness put together.
public struct SecureRandom: RandomNumberGenerator {
    public init() {}

    public mutating func next() -> UInt64 {
        var value: UInt64 = 0
        withUnsafeMutableBytes(of: &value) { Self.fill($0) }
        return value
    }

    /// Fills `buffer` with random bytes from the calling thread's generator.
    public static func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        KeyErasureGenerator.current.fill(buffer)
    }
}

/// One thread's generator (`SecureRandom`); never shared between threads, so it takes no lock.
final class KeyErasureGenerator {
    /// Bytes of each refill: eight 64-byte blocks, the first 32 bytes of which key the next refill.
    static let refillBytes = 512
    static let keyBytes = 32
    /// Refills between keys from the system: 256 × 480 bytes, about 2,500 proxied requests' worth.
    static let reseedInterval = 256

    /// The key (8 words), then the refill's output.
    private let key = UnsafeMutablePointer<UInt32>.allocate(capacity: 8)
    private let output = UnsafeMutableRawBufferPointer.allocate(byteCount: refillBytes, alignment: 16)
    /// Where the unused output begins; `refillBytes` when none is left.
    private var next = refillBytes
    private var refills = 0

    init() {
        key.initialize(repeating: 0, count: 8)
        output.initializeMemory(as: UInt8.self, repeating: 0)
    }

    deinit {
        key.update(repeating: 0, count: 8)
        key.deallocate()
        output.initializeMemory(as: UInt8.self, repeating: 0)
        output.deallocate()
    }

    func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        var filled = 0
        while filled < buffer.count {
            if next == Self.refillBytes { refill() }
            let count = min(buffer.count - filled, Self.refillBytes - next)
            let source = UnsafeMutableRawBufferPointer(rebasing: output[next..<(next + count)])
            UnsafeMutableRawBufferPointer(rebasing: buffer[filled..<(filled + count)]).copyMemory(from: UnsafeRawBufferPointer(source))
            source.initializeMemory(as: UInt8.self, repeating: 0)
            next += count
            filled += count
        }
    }

    private func refill() {
        if refills % Self.reseedInterval == 0 {
            // Mixed into the key rather than replacing it: a weak draw never makes the generator weaker.
            withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 8) { fresh in
                arc4random_buf(fresh.baseAddress!, Self.keyBytes)
                for word in 0..<8 { key[word] ^= fresh[word] }
                fresh.initialize(repeating: 0)
            }
        }
        refills &+= 1
        for block in 0..<(Self.refillBytes / 64) {
            ChaCha20.block(key: key, counter: UInt32(block), nonce: (0, 0, 0), into: output.baseAddress! + block * 64)
        }
        for word in 0..<8 { key[word] = UInt32(littleEndian: output.load(fromByteOffset: word * 4, as: UInt32.self)) }
        output.baseAddress!.initializeMemory(as: UInt8.self, repeating: 0, count: Self.keyBytes)
        next = Self.keyBytes
    }

    /// The calling thread's generator, made on its first use and released when the thread ends.
    static var current: KeyErasureGenerator {
        if let stored = pthread_getspecific(threadKey) { return Unmanaged<KeyErasureGenerator>.fromOpaque(stored).takeUnretainedValue() }
        let generator = KeyErasureGenerator()
        pthread_setspecific(threadKey, Unmanaged.passRetained(generator).toOpaque())
        return generator
    }

    private static let threadKey: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key) { stored in
            #if canImport(Darwin)
                Unmanaged<KeyErasureGenerator>.fromOpaque(stored).release()
            #else
                if let stored { Unmanaged<KeyErasureGenerator>.fromOpaque(stored).release() }
            #endif
        }
        return key
    }()
}

/// The ChaCha20 block function (RFC 8439 §2.3).
enum ChaCha20 {
    /// The 64-byte block for `key` (8 little-endian words), `counter` and `nonce`, written to `output`.
    static func block(key: UnsafePointer<UInt32>, counter: UInt32, nonce: (UInt32, UInt32, UInt32), into output: UnsafeMutableRawPointer) {
        var x0: UInt32 = 0x6170_7865, x1: UInt32 = 0x3320_646e, x2: UInt32 = 0x7962_2d32, x3: UInt32 = 0x6b20_6574
        var x4 = key[0], x5 = key[1], x6 = key[2], x7 = key[3], x8 = key[4], x9 = key[5], x10 = key[6], x11 = key[7]
        var x12 = counter, x13 = nonce.0, x14 = nonce.1, x15 = nonce.2
        @inline(__always) func quarter(_ a: inout UInt32, _ b: inout UInt32, _ c: inout UInt32, _ d: inout UInt32) {
            a &+= b; d ^= a; d = d.rotatedLeft(16)
            c &+= d; b ^= c; b = b.rotatedLeft(12)
            a &+= b; d ^= a; d = d.rotatedLeft(8)
            c &+= d; b ^= c; b = b.rotatedLeft(7)
        }
        for _ in 0..<10 {
            quarter(&x0, &x4, &x8, &x12)
            quarter(&x1, &x5, &x9, &x13)
            quarter(&x2, &x6, &x10, &x14)
            quarter(&x3, &x7, &x11, &x15)
            quarter(&x0, &x5, &x10, &x15)
            quarter(&x1, &x6, &x11, &x12)
            quarter(&x2, &x7, &x8, &x13)
            quarter(&x3, &x4, &x9, &x14)
        }
        output.storeBytes(of: (x0 &+ 0x6170_7865).littleEndian, toByteOffset: 0, as: UInt32.self)
        output.storeBytes(of: (x1 &+ 0x3320_646e).littleEndian, toByteOffset: 4, as: UInt32.self)
        output.storeBytes(of: (x2 &+ 0x7962_2d32).littleEndian, toByteOffset: 8, as: UInt32.self)
        output.storeBytes(of: (x3 &+ 0x6b20_6574).littleEndian, toByteOffset: 12, as: UInt32.self)
        output.storeBytes(of: (x4 &+ key[0]).littleEndian, toByteOffset: 16, as: UInt32.self)
        output.storeBytes(of: (x5 &+ key[1]).littleEndian, toByteOffset: 20, as: UInt32.self)
        output.storeBytes(of: (x6 &+ key[2]).littleEndian, toByteOffset: 24, as: UInt32.self)
        output.storeBytes(of: (x7 &+ key[3]).littleEndian, toByteOffset: 28, as: UInt32.self)
        output.storeBytes(of: (x8 &+ key[4]).littleEndian, toByteOffset: 32, as: UInt32.self)
        output.storeBytes(of: (x9 &+ key[5]).littleEndian, toByteOffset: 36, as: UInt32.self)
        output.storeBytes(of: (x10 &+ key[6]).littleEndian, toByteOffset: 40, as: UInt32.self)
        output.storeBytes(of: (x11 &+ key[7]).littleEndian, toByteOffset: 44, as: UInt32.self)
        output.storeBytes(of: (x12 &+ counter).littleEndian, toByteOffset: 48, as: UInt32.self)
        output.storeBytes(of: (x13 &+ nonce.0).littleEndian, toByteOffset: 52, as: UInt32.self)
        output.storeBytes(of: (x14 &+ nonce.1).littleEndian, toByteOffset: 56, as: UInt32.self)
        output.storeBytes(of: (x15 &+ nonce.2).littleEndian, toByteOffset: 60, as: UInt32.self)
    }
}

extension UInt32 {
    @inline(__always) fileprivate func rotatedLeft(_ count: UInt32) -> UInt32 { (self << count) | (self >> (32 - count)) }
}
