import CompressNIO
import NIOConcurrencyHelpers

/// The deflate streams that compress rewritten pages (raw: the gateway writes the gzip member around them, `GzipFrame`), kept for the next page instead of made for each: a stream's
/// setup allocates its window and tables (about 50 KB) and frees them at the end, which cost more than compressing
/// a 10 KB page. A stream comes back reset; a page that never finishes (its member left) just drops its stream.
final class PageCompressors: Sendable {
    /// zlib's fastest level (nginx's default `gzip_comp_level`), an 8 KiB window and a 16 KiB hash: pages compress
    /// within a few percent of the defaults' size at a fraction of their memory.
    static let configuration = ZlibConfiguration(windowSize: 13, compressionLevel: 1, memoryLevel: 5)
    /// More than the event loops ever have pages in flight at once, mostly; beyond it streams are made and dropped.
    static let kept = 256

    static let shared = PageCompressors()

    private struct Idle: @unchecked Sendable {
        // Only ever used by one page at a time: taken out of the list under the lock, handed back the same way.
        var streams: [ZlibCompressor] = []
    }
    private let idle = NIOLockedValueBox(Idle())

    func take() throws -> ZlibCompressor {
        if let stream = idle.withLockedValue({ $0.streams.popLast() }) { return stream }
        return try ZlibCompressor(algorithm: .deflate, configuration: Self.configuration)
    }

    func giveBack(_ stream: ZlibCompressor) {
        guard (try? stream.reset()) != nil else { return }
        idle.withLockedValue { idle in
            if idle.streams.count < Self.kept { idle.streams.append(stream) }
        }
    }
}
