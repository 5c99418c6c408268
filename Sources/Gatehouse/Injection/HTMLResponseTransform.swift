import CompressNIO
import NIOCore

/// Turns an upstream HTML body, chunk by chunk, into what the browser gets: inflated when the upstream compressed
/// it, then rewritten (URLs, banner). Memory stays at one chunk plus one tag whatever the document's size.
struct HTMLResponseTransform {
    enum Encoding {
        case identity
        case gzip
        case deflate
    }

    private var rewriter: HTMLStreamRewriter
    private var decompressor: ZlibDecompressor?
    private let encoding: Encoding
    private var sawFirstByte = false
    private let allocator = ByteBufferAllocator()

    init(rewriter: HTMLStreamRewriter, encoding: Encoding) {
        self.rewriter = rewriter
        self.encoding = encoding
    }

    /// `gzip`, `x-gzip`, `deflate` or none; any other coding is not something the gateway may rewrite.
    static func encoding(of contentEncoding: String?) -> Encoding? {
        switch contentEncoding?.lowercased().trimmingCharacters(in: .whitespaces) {
        case nil, "", "identity": .identity
        case "gzip", "x-gzip": .gzip
        case "deflate": .deflate
        default: nil
        }
    }

    mutating func process(_ chunk: ByteBuffer) throws -> ByteBuffer {
        let plain = try inflate(chunk)
        return ByteBuffer(bytes: rewriter.feed(plain.readableBytesView))
    }

    mutating func finish() -> ByteBuffer {
        ByteBuffer(bytes: rewriter.finish())
    }

    private mutating func inflate(_ chunk: ByteBuffer) throws -> ByteBuffer {
        guard encoding != .identity else { return chunk }
        var input = chunk
        if decompressor == nil {
            guard let first = input.readableBytesView.first else { return ByteBuffer() }
            // `Content-Encoding: deflate` is meant to be zlib-wrapped; some servers send raw deflate.
            let algorithm: ZlibAlgorithm = encoding == .gzip ? .gzip : (first & 0x0F == 8 ? .zlib : .deflate)
            decompressor = try ZlibDecompressor(algorithm: algorithm)
        }
        var output = allocator.buffer(capacity: max(4096, input.readableBytes * 4))
        while input.readableBytes > 0 {
            do {
                try decompressor!.inflate(from: &input, to: &output)
                break
            } catch let error as CompressNIOError where error == .bufferOverflow {
                output.reserveCapacity(minimumWritableBytes: output.capacity)
            }
        }
        return output
    }
}
