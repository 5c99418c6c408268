import Foundation
import GatehouseDataPlane
import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing

@testable import Gatehouse

/// The member listener's own HTTP/1.1 reader (`HTTP1RequestReader`) against what framed requests before it: NIO's
/// `HTTPRequestDecoder` followed by the checks RFC 9112 adds to what that decoder accepts (`FramingOracle`). The same
/// byte streams, whole and split, go to both: wherever the oracle accepts, the reader must read the same requests
/// (method, target, version, fields, body, trailers); wherever the oracle refuses, the reader must refuse, with the
/// same status when the stream is complete. A stream the two read differently fails the test.
///
/// The streams: every framing case of `RequestFramingTests`, each split at every byte, and generated ones (random
/// methods, targets, versions, fields and values, lengths and codings right and wrong, chunk sizes and extensions,
/// trailers, pipelined requests, line ends, oversized parts, invalid bytes), split at random. The count is bounded
/// here; `READER_DIFFERENTIAL_COUNT` and `READER_DIFFERENTIAL_SEED` run more and others
/// (`bench/reader-differential.sh`).
@Suite struct RequestReaderDifferentialTests {
    static let limits = (target: 8 * 1024, fields: 32 * 1024, count: 256)

    /// Runs `work` on a thread of its own, which gives back what it found wrong: the reading is seconds of work in a
    /// debug build, which on one of the few threads every other test's tasks share would hold those tests' servers
    /// up. The findings are expected empty here, in the test's own task (an expectation on another thread would
    /// belong to no test).
    static func expectNoFindings(sourceLocation: SourceLocation = #_sourceLocation, _ work: @escaping @Sendable () throws -> [String]) async throws {
        let findings = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<[String], any Error>) in
            Thread.detachNewThread { continuation.resume(with: Result { try work() }) }
        }
        #expect(findings.isEmpty, "\(findings.count) findings, the first:\n\(findings.prefix(10).joined(separator: "\n"))", sourceLocation: sourceLocation)
    }

    @Test func everyFramingCaseOfTheHostileTableIsReadAlikeWholeAndSplitAtEveryByte() async throws {
        try await Self.expectNoFindings {
            var findings: [String] = []
            for (name, bytes, status) in RequestFramingTests.cases {
                let oracle = try Self.oracle([bytes])
                if oracle.refusal != status { findings.append("\(name): the oracle answers \(oracle.refusal ?? 200), not \(status)") }
                try Self.compare(name, [bytes], into: &findings)
                for split in 1..<bytes.count where bytes.count < 2_000 {
                    try Self.compare("\(name) split at \(split)", [Array(bytes[..<split]), Array(bytes[split...])], into: &findings)
                }
                if bytes.count < 600 { try Self.compare("\(name) byte by byte", bytes.map { [$0] }, into: &findings) }
            }
            return findings
        }
    }

    @Test func wellFormedRequestsAreReadAlikeInEveryForm() async throws {
        let streams: [(String, String)] = [
            ("a GET", "GET /apps/wiki/page?x=1 HTTP/1.1\r\nHost: gateway.test\r\nCookie: a=1; b=2\r\n\r\n"),
            ("a POST with a length", "POST /form HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello"),
            (
                "a chunked POST with extensions and trailers",
                "POST /up HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5;name=value\r\nhello\r\n6;q=\"a b\"\r\n world\r\n0\r\nX-T: 1\r\n\r\n"
            ),
            ("pipelined", "GET /1 HTTP/1.1\r\nHost: a\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\nPOST /3 HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nok"),
            ("HTTP/1.0 without Host", "GET / HTTP/1.0\r\n\r\n"),
            ("an empty line first", "\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n"),
            ("an upgrade, then bytes that are not HTTP", "GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n\u{01}\u{02}junk"),
            ("values with tabs and obs-text", "GET / HTTP/1.1\r\nHost: a\r\nX-A:\t b\u{00E9}c \t\r\nX-Empty:\r\n\r\n"),
        ]
        try await Self.expectNoFindings {
            var findings: [String] = []
            for (name, text) in streams {
                let bytes = Array(text.utf8)
                if try Self.oracle([bytes]).refusal != nil { findings.append("\(name): the oracle refused it") }
                try Self.compare(name, [bytes], into: &findings)
                for split in 1..<bytes.count { try Self.compare("\(name) split at \(split)", [Array(bytes[..<split]), Array(bytes[split...])], into: &findings) }
                try Self.compare("\(name) byte by byte", bytes.map { [$0] }, into: &findings)
            }
            return findings
        }
    }

    @Test func generatedStreamsAreReadAlike() async throws {
        let count = ProcessInfo.processInfo.environment["READER_DIFFERENTIAL_COUNT"].flatMap(Int.init) ?? 3_000
        // The test command's streams are the same every run; a longer run may start elsewhere.
        let seed = ProcessInfo.processInfo.environment["READER_DIFFERENTIAL_SEED"].flatMap { UInt64($0) } ?? 0x6761_7465_686F_7573
        try await Self.expectNoFindings {
            var generator = RequestStreamGenerator(seed: seed)
            var findings: [String] = []
            var refused = 0
            for index in 0..<count {
                let bytes = generator.stream()
                let chunks = generator.split(bytes)
                let name = "generated #\(index) of seed \(seed): \(String(decoding: bytes.prefix(400), as: UTF8.self).debugDescription)"
                if try Self.compare(compareStatus: false, name, chunks, into: &findings).refusal != nil { refused += 1 }
            }
            // Both kinds must be well represented, or the generator tests little.
            if !(refused > count / 5 && refused < count * 4 / 5) { findings.append("\(refused) of \(count) refused: the generator tests little") }
            return findings
        }
    }

    // MARK: - Reading a stream both ways

    struct Request: Equatable, CustomStringConvertible {
        var method: String
        var target: String
        var version: HTTPVersion
        var fields: [String]
        var body: [UInt8] = []
        var trailers: [String]?
        var description: String { "\(method) \(target) \(version) \(fields) body \(body.count) trailers \(trailers ?? [])" }
    }

    struct Outcome: Equatable {
        var requests: [Request] = []
        /// The status a refusal is answered with; `0` for a refusal only at the connection's end (nothing is answered).
        var refusal: Int?
        /// The last request read ends the connection (HTTP/1.0 without keep-alive, `Connection: close`).
        var endsConnection = false
    }

    /// Reads `chunks` both ways; a difference is added to `findings`. Returns the oracle's outcome.
    @discardableResult
    static func compare(compareStatus: Bool = true, _ name: String, _ chunks: [[UInt8]], into findings: inout [String]) throws -> Outcome {
        var expected = try oracle(chunks)
        // NIO refuses any byte after a request that ends the connection; the reader reads nothing after it (RFC 9112
        // §9.6), and the connection closes after that request's answer: both end the connection there.
        if expected.refusal != nil, expected.endsConnection { expected.refusal = nil }
        let read = try reader(chunks)
        var alike = expected.requests == read.requests && (expected.refusal == nil) == (read.refusal == nil)
        // A refusal's status must agree when both refused before the connection's end. Not for generated streams:
        // one often breaks several rules at once, and which a reader meets first is no difference in framing.
        if compareStatus, let one = expected.refusal, let other = read.refusal, one != 0, other != 0 { alike = alike && one == other }
        if !alike { findings.append("\(name):\n  oracle \(expected)\n  reader \(read)") }
        return expected
    }

    /// NIO's decoder, then the checks the gateway added to it (`FramingOracle.problem`).
    static func oracle(_ chunks: [[UInt8]]) throws -> Outcome {
        let collector = Collector<HTTPRequestHead> { head in
            if let status = FramingOracle.problem(with: head, maximumTargetBytes: limits.target) { return Int(status.code) }
            return nil
        } describe: { head in
            // One deliberate difference: NIO keeps the whitespace after a value, which RFC 9110 §5.5 says is no part
            // of it; the reader leaves it out.
            Request(
                method: head.method.rawValue, target: head.uri, version: head.version,
                fields: head.headers.map { "\($0.name): \(Self.withoutTrailingWhitespace($0.value))" })
        } status: { error in
            (error as? HTTPParserError).map { Int(FramingOracle.status(for: $0).code) }
        }
        collector.keepsAlive = { $0.isKeepAlive }
        var configuration = NIOHTTPDecoderLimitConfiguration()
        configuration.maxHeaderFieldSize = limits.fields
        configuration.maxHeaderListSize = limits.fields
        configuration.maxHeaderFieldCount = limits.count
        return try collector.run(chunks, decoder: ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .dropBytes, informationalResponseStrategy: .drop, limitConfiguration: configuration)))
    }

    static func withoutTrailingWhitespace(_ value: String) -> Substring {
        var value = Substring(value)
        while let last = value.last, last == " " || last == "\t" { value.removeLast() }
        return value
    }

    static func reader(_ chunks: [[UInt8]]) throws -> Outcome {
        let collector = Collector<RequestHead> { _ in nil } describe: { head in
            Request(method: head.method.rawValue, target: head.uri, version: head.version, fields: head.fields.map { "\(head.name($0)): \(head.value($0))" })
        } status: { error in
            (error as? RequestFramingError).map { Int($0.status.code) }
        }
        return try collector.run(
            chunks,
            decoder: ByteToMessageHandler(
                HTTP1RequestReader(limits: .init(maximumTargetBytes: limits.target, maximumFieldBytes: limits.fields, maximumFieldCount: limits.count), answers: nil)))
    }

    /// Takes a decoder's parts into complete requests until a refusal.
    final class Collector<Head: Equatable & Sendable>: ChannelInboundHandler {
        var keepsAlive: (Head) -> Bool = { _ in true }
        typealias InboundIn = HTTPPart<Head, ByteBuffer>
        let check: (Head) -> Int?
        let describe: (Head) -> Request
        let status: (any Error) -> Int?
        var outcome = Outcome()
        var current: Request?
        var currentEnds = false
        var ended = false

        init(check: @escaping (Head) -> Int?, describe: @escaping (Head) -> Request, status: @escaping (any Error) -> Int?) {
            self.check = check
            self.describe = describe
            self.status = status
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard outcome.refusal == nil else { return }
            switch unwrapInboundIn(data) {
            case .head(let head):
                if let refusal = check(head) {
                    outcome.refusal = ended ? 0 : refusal
                    return
                }
                current = describe(head)
                currentEnds = !keepsAlive(head)
                outcome.endsConnection = false
            case .body(let chunk):
                current?.body += chunk.readableBytesView
            case .end(let trailers):
                current?.trailers = trailers.map { $0.map { "\($0.name): \($0.value)" } }
                if let current { outcome.requests.append(current) }
                outcome.endsConnection = currentEnds
                current = nil
            }
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            guard outcome.refusal == nil else { return }
            outcome.refusal = ended ? 0 : (status(error) ?? -1)
        }

        func run(_ chunks: [[UInt8]], decoder: some ChannelInboundHandler & RemovableChannelHandler) throws -> Outcome {
            let channel = EmbeddedChannel()
            try channel.pipeline.syncOperations.addHandlers([decoder, self])
            for chunk in chunks where outcome.refusal == nil {
                try? channel.writeInbound(ByteBuffer(bytes: chunk))
            }
            // The client closes: what is left is read as the connection's last bytes.
            ended = true
            _ = try? channel.finish()
            // A request cut off by the connection's end is no request.
            return outcome
        }
    }
}
