import CompressNIO
import GatehouseCore
import NIOCore

/// Turns an upstream HTML body (or style sheet), chunk by chunk, into what the browser gets: inflated when the upstream
/// compressed it, then rewritten (URLs, banner), then gzipped again for a browser that takes it. Memory stays at one chunk plus
/// one tag (and zlib's window) whatever the document's size, and inflation stops at the configured size and ratio,
/// so a small bomb cannot become gigabytes.
struct HTMLResponseTransform {
    enum Encoding {
        case identity
        case gzip
        case deflate
    }

    /// How far a compressed body may grow.
    struct InflationLimits {
        var maximumBytes: Int
        var maximumRatio: Int
        /// The ratio is judged only past this much output: tiny, very repetitive pages are fine.
        var ratioFloor = 1 << 20
    }

    /// What rewrites the inflated bytes: a page's rewriter, or a style sheet's (held apart, so each is mutated in place).
    enum Rewriter {
        case html(HTMLStreamRewriter)
        case css(CSSStreamRewriter)
    }

    private var html: HTMLStreamRewriter?
    private var css: CSSStreamRewriter?
    private var decompressor: ZlibDecompressor?
    private let encoding: Encoding
    private let limits: InflationLimits
    private var compressedBytes = 0
    private var inflatedBytes = 0
    private let allocator = ByteBufferAllocator()
    /// What the member gets instead when the body turns out empty (an app's empty error page, `AnswerMapping`).
    private let emptyBody: [UInt8]?
    private var sawBytes = false
    /// Set when what the member gets is gzipped (`PageCompressors`), flushed at the end of every chunk so that a page
    /// still arrives as the app sends it; handed back when the page is finished.
    private var compressor: ZlibCompressor?
    /// The gzip member the compressed bytes go in (`GzipFrame`), its header written before the first of them.
    private var frame = GzipFrame()

    init(rewriter: Rewriter, encoding: Encoding, limits: InflationLimits, emptyBody: [UInt8]? = nil, compresses: Bool = false)
        throws
    {
        switch rewriter {
        case .html(let rewriter): html = rewriter
        case .css(let rewriter): css = rewriter
        }
        self.encoding = encoding
        self.limits = limits
        self.emptyBody = emptyBody
        compressor = compresses ? try PageCompressors.shared.take() : nil
    }

    /// `gzip`, `x-gzip`, `deflate` or none; any other coding is not something the gateway may rewrite.
    static func encoding(of contentEncoding: String?) -> Encoding? {
        switch contentEncoding?.lowercased().trimmingOptionalWhitespace {
        case nil, "", "identity": .identity
        case "gzip", "x-gzip": .gzip
        case "deflate": .deflate
        default: nil
        }
    }

    mutating func process(_ chunk: ByteBuffer) throws(ProxyError) -> ByteBuffer {
        let plain = try inflate(chunk)
        if plain.readableBytes > 0 { sawBytes = true }
        return try compress(html?.feed(plain.readableBytesView) ?? css!.feed(plain.readableBytesView), flush: .sync)
    }

    /// The body's last bytes (and the end of the gzip member). A failure to compress them (zlib out of memory) ends
    /// the member's body incomplete, which the browser tells as such.
    mutating func finish() -> ByteBuffer {
        let rest = !sawBytes && emptyBody != nil ? emptyBody! : html?.finish() ?? css!.finish()
        guard let stream = compressor else { return ByteBuffer(bytes: rest) }
        let last = (try? compress(rest, flush: .finish)) ?? ByteBuffer()
        compressor = nil
        PageCompressors.shared.giveBack(stream)
        return last
    }

    /// `bytes` deflated into the gzip member (its header before the first, its trailer after the last), or as they are
    /// when the page goes uncompressed.
    private mutating func compress(_ bytes: [UInt8], flush: CompressNIOFlush) throws(ProxyError) -> ByteBuffer {
        guard let compressor else { return ByteBuffer(bytes: bytes) }
        if bytes.isEmpty && flush != .finish { return ByteBuffer() }
        var input = ByteBuffer(bytes: bytes)
        var output = allocator.buffer(capacity: compressor.maxSize(from: input) + GzipFrame.maximumPadding + 32)
        output.writeBytes(frame.headerIfFirst())
        frame.add(bytes)
        do {
            while true {
                do {
                    try compressor.deflate(from: &input, to: &output, flush: flush)
                    break
                } catch let error as CompressNIOError where error == .bufferOverflow {
                    output.reserveCapacity(minimumWritableBytes: max(output.capacity, 64))
                }
            }
        } catch {
            throw .pageCompressionFailed("\(error)")
        }
        if flush == .finish { output.writeBytes(frame.trailer) }
        return output
    }

    private mutating func inflate(_ chunk: ByteBuffer) throws(ProxyError) -> ByteBuffer {
        guard encoding != .identity else { return chunk }
        var input = chunk
        do {
            if decompressor == nil {
                guard let first = input.readableBytesView.first else { return ByteBuffer() }
                // `Content-Encoding: deflate` is meant to be zlib-wrapped; some servers send raw deflate.
                let algorithm: ZlibAlgorithm = encoding == .gzip ? .gzip : (first & 0x0F == 8 ? .zlib : .deflate)
                decompressor = try ZlibDecompressor(algorithm: algorithm)
            }
            compressedBytes += input.readableBytes
            var output = allocator.buffer(capacity: max(4096, min(input.readableBytes * 4, 1 << 20)))
            while input.readableBytes > 0 {
                do {
                    try decompressor!.inflate(from: &input, to: &output)
                    break
                } catch let error as CompressNIOError where error == .bufferOverflow {
                    try checkLimits(adding: output.readableBytes)
                    output.reserveCapacity(minimumWritableBytes: output.capacity)
                }
            }
            try checkLimits(adding: output.readableBytes)
            inflatedBytes += output.readableBytes
            return output
        } catch let error as ProxyError {
            throw error
        } catch {
            throw .upstreamBodyCorrupt("the page's \(encoding) body: \(error)")
        }
    }

    private func checkLimits(adding pending: Int) throws(ProxyError) {
        let total = inflatedBytes + pending
        if total > limits.maximumBytes {
            throw .inflationLimit("inflated past \(limits.maximumBytes) bytes from \(compressedBytes)")
        }
        if total > limits.ratioFloor, total > compressedBytes * limits.maximumRatio {
            throw .inflationLimit("\(compressedBytes) compressed bytes inflated past \(limits.maximumRatio)×")
        }
    }
}
