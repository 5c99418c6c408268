import NIOCore
import NIOHTTP1

/// A request part as the member listener reads it: the head as bytes (`RequestHead`), the body as it arrives, the
/// end with any trailer fields.
public typealias MemberRequestPart = HTTPPart<RequestHead, ByteBuffer>

/// Why a request's framing was refused, and the status it is answered with (then the connection closes).
public struct RequestFramingError: Error, Equatable, CustomStringConvertible {
    public let status: HTTPResponseStatus
    public let reason: String

    init(_ status: HTTPResponseStatus, _ reason: String) {
        self.status = status
        self.reason = reason
    }

    public var description: String { "\(status.code): \(reason)" }
}

/// The member listener's HTTP/1.1 reader: frames requests straight from the connection's bytes (RFC 9112) and hands
/// on each head as `RequestHead`, ranges into the bytes it came in, its body as slices of them.
///
/// What it refuses, with the status the connection is then answered with before it closes:
/// - `400`: a request line that is not `method SP target SP HTTP/1.x`, a target with a byte no target has, a field
///   line without a token name right before its colon, whitespace before the colon, obs-fold, a CR not followed by
///   LF or an LF without its CR, a control byte in a value; no or several `Host` fields in HTTP/1.1, a `Host` that is
///   no `uri-host [":" port]`; several `Content-Length` fields or one that is not 1–15 digits; `Content-Length`
///   together with `Transfer-Encoding`, `Transfer-Encoding` in HTTP/1.0 or whose last coding is not `chunked`; a
///   chunk size that is not hexadecimal or too long, a chunk not followed by CRLF, a malformed trailer field;
/// - `501`: a method it does not know, codings before `chunked` it cannot decode;
/// - `414`: a target longer than `maximumTargetBytes`; `431`: more than `maximumFieldCount` fields, or more than
///   `maximumFieldBytes` of names and values.
///
/// Line ends before a request line are skipped (RFC 9112 §2.2; bare CR and LF too, as llhttp skips them). After a request that upgrades the connection
/// (`Connection: upgrade` with `Upgrade`, or `CONNECT`) it reads nothing more: what follows belongs to whoever takes
/// the connection over. `differential` tests hold it to NIO's `HTTPRequestDecoder` with the gateway's checks.
public struct HTTP1RequestReader: ByteToMessageDecoder {
    public typealias InboundOut = MemberRequestPart

    public struct Limits: Sendable {
        public var maximumTargetBytes: Int
        public var maximumFieldBytes: Int
        public var maximumFieldCount: Int

        public init(maximumTargetBytes: Int, maximumFieldBytes: Int, maximumFieldCount: Int) {
            self.maximumTargetBytes = maximumTargetBytes
            self.maximumFieldBytes = maximumFieldBytes
            self.maximumFieldCount = maximumFieldCount
        }
    }

    private enum State {
        /// Reading a head: lines up to `scanned` are checked; `fields` so far; the request line once read.
        case head(scanned: Int, requestLine: RequestLine?, fields: [RequestHead.Field], fieldBytes: Int)
        case body(remaining: Int)
        case chunkSize
        case chunkData(remaining: Int)
        case chunkEnd
        /// After the last chunk: trailer fields until an empty line.
        case trailers(HTTPHeaders)
        /// The body is complete: the request's end is next.
        case ending
        /// After an upgrade, or a request after which the connection closes (RFC 9112 §9.6): nothing more is read.
        case stopped
    }

    private struct RequestLine {
        let method: HTTPMethod
        let version: HTTPVersion
        let target: Range<Int>
    }

    private let limits: Limits
    /// Told each request's method, so that its answer is framed for it.
    private let answers: HTTP1ResponseWriter?
    private var state = State.head(scanned: 0, requestLine: nil, fields: [], fieldBytes: 0)
    /// The request being read upgrades the connection or ends it.
    private var stopsAfterThisRequest = false

    public init(limits: Limits, answers: HTTP1ResponseWriter?) {
        self.limits = limits
        self.answers = answers
    }

    /// Every part the bytes make (a body's end may need no byte of its own).
    public mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        while let part = try next(&buffer) { context.fireChannelRead(wrapInboundOut(part)) }
        return .needMoreData
    }

    public mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        while let part = try next(&buffer) { context.fireChannelRead(wrapInboundOut(part)) }
        switch state {
        case .stopped: break
        case .head(let scanned, let line, _, _) where scanned == 0 && line == nil && buffer.readableBytes == 0: break
        default: throw RequestFramingError(.badRequest, "the connection ended inside a request")
        }
        return .needMoreData
    }

    /// The next part the bytes make, `nil` when more bytes are needed.
    public mutating func next(_ buffer: inout ByteBuffer) throws -> MemberRequestPart? {
        switch state {
        case .stopped:
            return nil
        case .head(let scanned, let line, let fields, let fieldBytes):
            state = .stopped  // the fields are the reader's alone while it adds to them (no copy on write)
            return try readHead(&buffer, scanned: scanned, line: line, fields: fields, fieldBytes: fieldBytes)
        case .body(let remaining):
            guard let (chunk, left) = Self.readBody(&buffer, remaining: remaining) else { return nil }
            state = left == 0 ? .ending : .body(remaining: left)
            return .body(chunk)
        case .chunkSize:
            guard let line = try readLine(&buffer, limit: 1024, what: "chunk size") else { return nil }
            let size = try Self.chunkSize(line)
            state = size == 0 ? .trailers(HTTPHeaders()) : .chunkData(remaining: size)
            return try next(&buffer)
        case .chunkData(let remaining):
            guard let (chunk, left) = Self.readBody(&buffer, remaining: remaining) else { return nil }
            state = left == 0 ? .chunkEnd : .chunkData(remaining: left)
            return .body(chunk)
        case .chunkEnd:
            guard buffer.readableBytes >= 2 else { return nil }
            guard buffer.readInteger(as: UInt16.self) == 0x0D0A else { throw RequestFramingError(.badRequest, "a chunk not followed by CRLF") }
            state = .chunkSize
            return try next(&buffer)
        case .ending:
            return end()
        case .trailers(var trailers):
            while true {
                guard let line = try readLine(&buffer, limit: limits.maximumFieldBytes, what: "trailer") else {
                    state = .trailers(trailers)
                    return nil
                }
                if line.readableBytes == 0 { return end(trailers: trailers.isEmpty ? nil : trailers) }
                let field = try line.withUnsafeReadableBytes { raw in try Self.field(in: raw, line: 0..<raw.count) }
                trailers.add(
                    name: line.getString(at: line.readerIndex + field.name.lowerBound, length: field.name.count)!,
                    value: line.getString(at: line.readerIndex + field.value.lowerBound, length: field.value.count)!)
                guard trailers.count <= limits.maximumFieldCount else { throw RequestFramingError(.requestHeaderFieldsTooLarge, "too many trailer fields") }
            }
        }
    }

    /// As much of `remaining` bytes of a body as has arrived (a slice of the connection's buffer), and what is left.
    private static func readBody(_ buffer: inout ByteBuffer, remaining: Int) -> (ByteBuffer, left: Int)? {
        guard buffer.readableBytes > 0 else { return nil }
        let count = min(remaining, buffer.readableBytes)
        return (buffer.readSlice(length: count)!, remaining - count)
    }

    private mutating func end(trailers: HTTPHeaders? = nil) -> MemberRequestPart {
        state = stopsAfterThisRequest ? .stopped : .head(scanned: 0, requestLine: nil, fields: [], fieldBytes: 0)
        return .end(trailers)
    }

    /// One line ending in CRLF (returned without it) or `nil` until it is complete.
    private func readLine(_ buffer: inout ByteBuffer, limit: Int, what: String) throws -> ByteBuffer? {
        let found = buffer.withUnsafeReadableBytes { raw in raw.firstIndex(of: UInt8(ascii: "\n")) }
        guard let found else {
            if buffer.readableBytes > limit { throw RequestFramingError(.badRequest, "a \(what) line too long") }
            return nil
        }
        guard found > 0, buffer.getInteger(at: buffer.readerIndex + found - 1, as: UInt8.self) == UInt8(ascii: "\r") else {
            throw RequestFramingError(.badRequest, "an LF without its CR")
        }
        let line = buffer.readSlice(length: found - 1)!
        buffer.moveReaderIndex(forwardBy: 2)
        return line
    }

    // MARK: - The head

    private mutating func readHead(
        _ buffer: inout ByteBuffer, scanned: Int, line: RequestLine?, fields: [RequestHead.Field], fieldBytes: Int
    ) throws -> MemberRequestPart? {
        var scanned = scanned
        var line = line
        var fields = fields
        if fields.capacity == 0 { fields.reserveCapacity(16) }
        var fieldBytes = fieldBytes
        let outcome: HeadOutcome = try buffer.withUnsafeReadableBytes { raw in
            if line == nil, scanned == 0 {
                // Line ends before a request line are skipped, as llhttp skips them (bare CR and LF included).
                var skipped = 0
                while skipped < raw.count, raw[skipped] == UInt8(ascii: "\r") || raw[skipped] == UInt8(ascii: "\n") { skipped += 1 }
                if skipped > 0 { return .skip(skipped) }
            }
            while true {
                guard let lf = Self.index(of: UInt8(ascii: "\n"), in: raw, from: scanned) else {
                    let pending = raw.count - scanned
                    try Self.checkPartialLine(raw, from: scanned, isRequestLine: line == nil)
                    if line == nil, pending > limits.maximumTargetBytes + 32 { throw RequestFramingError(.uriTooLong, "a request line too long") }
                    if line != nil, pending + fieldBytes > limits.maximumFieldBytes + 2 {
                        throw RequestFramingError(.requestHeaderFieldsTooLarge, "fields too large")
                    }
                    return .needMore
                }
                guard lf > scanned, raw[lf - 1] == UInt8(ascii: "\r") else { throw RequestFramingError(.badRequest, "an LF without its CR") }
                let end = lf - 1
                defer { scanned = lf + 1 }
                if end == scanned { return .complete(lf + 1) }
                if line == nil {
                    line = try Self.requestLine(raw, scanned..<end, limits: limits)
                    continue
                }
                let field = try Self.field(in: raw, line: scanned..<end)
                fieldBytes += field.name.count + field.value.count
                fields.append(field)
                if fields.count > limits.maximumFieldCount { throw RequestFramingError(.requestHeaderFieldsTooLarge, "too many fields") }
                if fieldBytes > limits.maximumFieldBytes { throw RequestFramingError(.requestHeaderFieldsTooLarge, "fields too large") }
            }
        }
        switch outcome {
        case .needMore:
            state = .head(scanned: scanned, requestLine: line, fields: fields, fieldBytes: fieldBytes)
            return nil
        case .skip(let count):
            buffer.moveReaderIndex(forwardBy: count)
            state = .head(scanned: 0, requestLine: nil, fields: [], fieldBytes: 0)
            return try next(&buffer)
        case .complete(let length):
            let bytes = buffer.readSlice(length: length)!
            let head = RequestHead(bytes: bytes, method: line!.method, version: line!.version, target: line!.target, fields: fields)
            try frame(head)
            answers?.requestRead(head.method)
            return .head(head)
        }
    }

    private enum HeadOutcome {
        case needMore
        case skip(Int)
        case complete(Int)
    }

    /// RFC 9112's rules for what a complete head says about its body, and the state for the body.
    private mutating func frame(_ head: RequestHead) throws {
        if head.targetLength > limits.maximumTargetBytes { throw RequestFramingError(.uriTooLong, "a target too long") }
        var hosts = 0
        var host: RequestHead.Field?
        var lengths = 0
        var length: RequestHead.Field?
        var codings: [String] = []
        var upgrade = false
        for field in head.fields {
            if head.field(field, isNamed: "host") {
                hosts += 1
                host = field
            } else if head.field(field, isNamed: "content-length") {
                lengths += 1
                length = field
            } else if head.field(field, isNamed: "transfer-encoding") {
                codings += head.value(field).split(separator: ",", omittingEmptySubsequences: false).map { Self.trimmed($0).lowercased() }
            } else if head.field(field, isNamed: "upgrade") {
                upgrade = true
            }
        }
        if head.version.minor >= 1 || hosts > 0 {
            guard hosts == 1, let host, head.bytes.withUnsafeReadableBytes({ Self.isValidHost($0, host.value) }),
                !head.hasTrailingWhitespace(host)
            else { throw RequestFramingError(.badRequest, "no valid Host") }
        }
        var bodyLength = 0
        if let length {
            // Whitespace after the digits is no part of the value (RFC 9110 §5.5), yet a length written so is refused,
            // as NIO's parser and the gateway's checks before this reader refused it.
            guard lengths == 1, !head.hasTrailingWhitespace(length) else { throw RequestFramingError(.badRequest, "several Content-Length fields") }
            let value = head.bytes.withUnsafeReadableBytes { raw -> Int? in
                guard (1...15).contains(length.value.count) else { return nil }
                var value = 0
                for index in length.value {
                    guard Self.isDigit(raw[index]) else { return nil }
                    value = value * 10 + Int(raw[index] - UInt8(ascii: "0"))
                }
                return value
            }
            guard let value else { throw RequestFramingError(.badRequest, "a Content-Length that is no length") }
            bodyLength = value
        }
        let chunked = !codings.isEmpty
        if chunked {
            if length != nil || head.version.minor == 0 { throw RequestFramingError(.badRequest, "Transfer-Encoding with a length or in HTTP/1.0") }
            guard codings.last == "chunked" else { throw RequestFramingError(.badRequest, "Transfer-Encoding whose last coding is not chunked") }
            if codings.count > 1 {
                if codings.dropLast().contains("chunked") || codings.contains("") { throw RequestFramingError(.badRequest, "Transfer-Encoding malformed") }
                throw RequestFramingError(.notImplemented, "codings the gateway cannot decode")
            }
        }
        guard head.version.major == 1, head.version.minor <= 1 else { throw RequestFramingError(.badRequest, "a version that is not HTTP/1.x") }
        stopsAfterThisRequest =
            head.method == .CONNECT || !head.isKeepAlive || (upgrade && head.has(token: "upgrade", inFieldsNamed: "connection"))
        if head.method == .CONNECT || (!chunked && bodyLength == 0) {
            state = .ending
        } else if chunked {
            state = .chunkSize
        } else {
            state = .body(remaining: bodyLength)
        }
    }

    // MARK: - Lines

    private static func requestLine(_ raw: UnsafeRawBufferPointer, _ range: Range<Int>, limits: Limits) throws -> RequestLine {
        guard let firstSpace = index(of: UInt8(ascii: " "), in: raw, from: range.lowerBound), firstSpace < range.upperBound else {
            throw RequestFramingError(.badRequest, "a request line without a target")
        }
        let method = try method(UnsafeRawBufferPointer(rebasing: raw[range.lowerBound..<firstSpace]))
        let targetStart = firstSpace + 1
        var targetEnd = targetStart
        while targetEnd < range.upperBound, raw[targetEnd] != UInt8(ascii: " ") {
            guard isTargetByte(raw[targetEnd]) else { throw RequestFramingError(.badRequest, "a byte no target has") }
            targetEnd += 1
        }
        guard targetEnd > targetStart, targetEnd < range.upperBound else { throw RequestFramingError(.badRequest, "a request line without a version") }
        // `HTTP/` DIGIT `.` DIGIT; which versions the gateway speaks is decided once the head is complete.
        let version = UnsafeRawBufferPointer(rebasing: raw[(targetEnd + 1)..<range.upperBound])
        guard version.count == 8, version.starts(with: "HTTP/".utf8), isDigit(version[5]), version[6] == UInt8(ascii: "."), isDigit(version[7])
        else { throw RequestFramingError(.badRequest, "a version that is not HTTP/x.y") }
        let major = Int(version[5] - UInt8(ascii: "0"))
        let minor = Int(version[7] - UInt8(ascii: "0"))
        // The versions llhttp reads a head of (0.9 is refused once the head is complete, as NIO did).
        guard (major == 1 && minor <= 1) || (major == 0 && minor == 9) else { throw RequestFramingError(.badRequest, "an unknown version") }
        return RequestLine(method: method, version: HTTPVersion(major: major, minor: minor), target: targetStart..<targetEnd)
    }

    /// A request line is refused for its method as soon as the method has arrived.
    private static func method(_ bytes: UnsafeRawBufferPointer) throws -> HTTPMethod {
        // llhttp's `PRI` is HTTP/2's preface, never an HTTP/1.1 method.
        guard !bytes.elementsEqual("PRI".utf8) else { throw RequestFramingError(.badRequest, "HTTP/2's preface") }
        guard let method = knownMethod(bytes) else { throw RequestFramingError(.notImplemented, "an unknown method") }
        return method
    }

    /// Bytes of a line not yet ended that no line may hold: a request is refused as soon as they come, not when
    /// the line ends.
    private static func checkPartialLine(_ raw: UnsafeRawBufferPointer, from start: Int, isRequestLine: Bool) throws {
        if isRequestLine {
            if let space = index(of: UInt8(ascii: " "), in: raw, from: start) { _ = try method(UnsafeRawBufferPointer(rebasing: raw[start..<space])) }
        } else if start < raw.count, raw[start] == UInt8(ascii: " ") || raw[start] == UInt8(ascii: "\t") {
            throw RequestFramingError(.badRequest, "obs-fold")
        }
    }

    /// `field-name ":" OWS field-value OWS` in `line` of `raw`.
    private static func field(in raw: UnsafeRawBufferPointer, line: Range<Int>) throws -> RequestHead.Field {
        var index = line.lowerBound
        while index < line.upperBound, isTokenByte(raw[index]) { index += 1 }
        guard index > line.lowerBound, index < line.upperBound, raw[index] == UInt8(ascii: ":") else {
            throw RequestFramingError(.badRequest, "a field line without a name and its colon")
        }
        let name = line.lowerBound..<index
        index += 1
        while index < line.upperBound, raw[index] == UInt8(ascii: " ") || raw[index] == UInt8(ascii: "\t") { index += 1 }
        var end = line.upperBound
        while end > index, raw[end - 1] == UInt8(ascii: " ") || raw[end - 1] == UInt8(ascii: "\t") { end -= 1 }
        for position in index..<end where !isValueByte(raw[position]) {
            throw RequestFramingError(.badRequest, "a byte no field value has")
        }
        return RequestHead.Field(name: name, value: index..<end)
    }
}
