import NIOCore
import NIOHTTP1

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A request's head as the member's connection sent it: its bytes, and where in them the target and each field's
/// name and value are. Nothing is copied into a `String` until someone asks for that part; the data plane reads the
/// few fields it decides on in place, and only a request handed to the application becomes an `HTTPRequestHead`.
///
/// `HTTP1RequestReader` makes one from the connection's buffer after checking every framing rule; an HTTP/2 stream's
/// head, which NIOHTTP2 has checked, is written into bytes of the same form (`init(_:)`).
public struct RequestHead: Equatable, Sendable {
    /// One field line: the ranges of its name and of its value (without the whitespace around it) in `bytes`.
    public struct Field: Equatable, Sendable {
        let name: Range<Int>
        let value: Range<Int>
    }

    /// The head's bytes, from the request line's first byte to the end of the last field line.
    public let bytes: ByteBuffer
    public let method: HTTPMethod
    public let version: HTTPVersion
    let target: Range<Int>
    public let fields: [Field]
    /// Whether the client keeps the connection (HTTP/1.1 unless `Connection: close`, HTTP/1.0 only with
    /// `Connection: keep-alive`), as `HTTPRequestHead.isKeepAlive` says.
    public let isKeepAlive: Bool

    init(bytes: ByteBuffer, method: HTTPMethod, version: HTTPVersion, target: Range<Int>, fields: [Field]) {
        self.bytes = bytes
        self.method = method
        self.version = version
        self.target = target
        self.fields = fields
        isKeepAlive =
            version.major == 1 && version.minor >= 1
            ? !Self.has(token: "close", inFieldsNamed: "connection", fields, bytes)
            : Self.has(token: "keep-alive", inFieldsNamed: "connection", fields, bytes)
    }

    /// An HTTP/2 stream's head (or a test's), written as an HTTP/1.1 head would be.
    public init(_ head: HTTPRequestHead) {
        var buffer = ByteBuffer()
        buffer.reserveCapacity(head.uri.utf8.count + head.headers.reduce(32) { $0 + $1.name.utf8.count + $1.value.utf8.count + 4 })
        buffer.writeString(head.method.rawValue)
        buffer.writeInteger(UInt8(ascii: " "))
        let targetStart = buffer.writerIndex
        buffer.writeString(head.uri)
        let target = targetStart..<buffer.writerIndex
        buffer.writeString(" HTTP/\(head.version.major).\(head.version.minor)")
        var fields: [Field] = []
        fields.reserveCapacity(head.headers.count)
        for (name, value) in head.headers {
            buffer.writeStaticString("\r\n")
            let nameStart = buffer.writerIndex
            buffer.writeString(name)
            let nameEnd = buffer.writerIndex
            buffer.writeStaticString(": ")
            let valueStart = buffer.writerIndex
            buffer.writeString(value)
            fields.append(Field(name: nameStart..<nameEnd, value: valueStart..<buffer.writerIndex))
        }
        self.init(bytes: buffer, method: head.method, version: head.version, target: target, fields: fields)
    }

    // MARK: - Reading

    /// The request target as sent (`/apps/wiki/page?x=1`).
    public var uri: String { string(target) }

    public var targetLength: Int { target.count }

    public func name(_ field: Field) -> String { string(field.name) }
    public func value(_ field: Field) -> String { string(field.value) }

    /// Whether the field's name is `name` (given in lower case), compared in place.
    public func field(_ field: Field, isNamed name: StaticString) -> Bool {
        bytes.withUnsafeReadableBytes { raw in Self.equalsIgnoringCase(raw, field.name, name) }
    }

    /// Whether whitespace followed the field's value on its line.
    func hasTrailingWhitespace(_ field: Field) -> Bool {
        guard let byte = bytes.getInteger(at: bytes.readerIndex + field.value.upperBound, as: UInt8.self) else { return false }
        return byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t")
    }

    /// The index in `fields` of the first field named `name` (lower case) from `start` on.
    func index(of name: StaticString, from start: Int = 0) -> Int? {
        bytes.withUnsafeReadableBytes { raw in
            var index = start
            while index < fields.count {
                if Self.equalsIgnoringCase(raw, fields[index].name, name) { return index }
                index += 1
            }
            return nil
        }
    }

    /// The value of the first field named `name` (lower case).
    public func first(_ name: StaticString) -> String? {
        index(of: name).map { value(fields[$0]) }
    }

    /// Every value of the fields named `name` (lower case), in order.
    public func values(_ name: StaticString) -> [String] {
        var values: [String] = []
        var next = index(of: name)
        while let index = next {
            values.append(value(fields[index]))
            next = self.index(of: name, from: index + 1)
        }
        return values
    }

    public func contains(_ name: StaticString) -> Bool {
        index(of: name) != nil
    }

    /// The value of the cookie `name` in the request's `Cookie` fields (the first one sent), read in place.
    public func cookie(named name: String) -> String? {
        var next = index(of: "cookie")
        while let index = next {
            if let range = Self.cookie(named: name, in: fields[index].value, of: bytes) { return string(range) }
            next = self.index(of: "cookie", from: index + 1)
        }
        return nil
    }

    /// Whether a field named `name` lists `token` (lower case), compared in place without regard to case.
    public func has(token: StaticString, inFieldsNamed name: StaticString) -> Bool {
        Self.has(token: token, inFieldsNamed: name, fields, bytes)
    }

    static func has(token: StaticString, inFieldsNamed name: StaticString, _ fields: [Field], _ bytes: ByteBuffer) -> Bool {
        bytes.withUnsafeReadableBytes { raw in
            var index = 0
            while index < fields.count {
                if equalsIgnoringCase(raw, fields[index].name, name), list(raw, fields[index].value, contains: token) { return true }
                index += 1
            }
            return false
        }
    }

    /// Whether the comma-separated list in `range` has `token` as one of its elements (whitespace around them aside).
    static func list(_ raw: UnsafeRawBufferPointer, _ range: Range<Int>, contains token: StaticString) -> Bool {
        var start = range.lowerBound
        while start <= range.upperBound {
            var end = start
            while end < range.upperBound, raw[end] != UInt8(ascii: ",") { end += 1 }
            var elementStart = start
            var elementEnd = end
            while elementStart < elementEnd, raw[elementStart] == UInt8(ascii: " ") || raw[elementStart] == UInt8(ascii: "\t") { elementStart += 1 }
            while elementEnd > elementStart, raw[elementEnd - 1] == UInt8(ascii: " ") || raw[elementEnd - 1] == UInt8(ascii: "\t") { elementEnd -= 1 }
            if equalsIgnoringCase(raw, elementStart..<elementEnd, token) { return true }
            start = end + 1
        }
        return false
    }

    /// Whether the bytes in `range` are `expected` (lower case) but for the case of their letters. Index loops over
    /// the raw bytes: generic collection code allocates in a debug build, which the allocation tests count.
    static func equalsIgnoringCase(_ raw: UnsafeRawBufferPointer, _ range: Range<Int>, _ expected: StaticString) -> Bool {
        guard range.count == expected.utf8CodeUnitCount else { return false }
        let start = expected.utf8Start
        var offset = 0
        while offset < range.count {
            let byte = raw[range.lowerBound + offset]
            if byte | lowerCaseBit(byte) != start[offset] { return false }
            offset += 1
        }
        return true
    }

    /// The head as NIO's HTTP handlers and the application take it.
    public var httpRequestHead: HTTPRequestHead {
        var headers = HTTPHeaders()
        headers.reserveCapacity(fields.count)
        for field in fields { headers.add(name: name(field), value: value(field)) }
        return HTTPRequestHead(version: version, method: method, uri: uri, headers: headers)
    }

    func string(_ range: Range<Int>) -> String {
        bytes.getString(at: bytes.readerIndex + range.lowerBound, length: range.count) ?? ""
    }

    /// `0x20` for an ASCII capital letter, else 0: OR-ed in, it lowers the letter.
    @inline(__always) static func lowerCaseBit(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? 0x20 : 0
    }

    /// The range of cookie `name`'s value in a `Cookie` field's value (`a=1; b=2`): pair by pair, spaces before a
    /// pair's name skipped, the value as sent.
    static func cookie(named name: String, in value: Range<Int>, of bytes: ByteBuffer) -> Range<Int>? {
        var name = name
        return name.withUTF8 { wanted in
            bytes.withUnsafeReadableBytes { raw in
                var start = value.lowerBound
                while start < value.upperBound {
                    var end = start
                    while end < value.upperBound, raw[end] != UInt8(ascii: ";") { end += 1 }
                    var pairStart = start
                    while pairStart < end, raw[pairStart] == UInt8(ascii: " ") { pairStart += 1 }
                    let nameEnd = pairStart + wanted.count
                    if nameEnd < end, raw[nameEnd] == UInt8(ascii: "="),
                        wanted.isEmpty || memcmp(raw.baseAddress! + pairStart, wanted.baseAddress!, wanted.count) == 0
                    {
                        return (nameEnd + 1)..<end
                    }
                    start = end + 1
                }
                return nil
            }
        }
    }
}

/// An HTTP/2 stream's request parts (after NIOHTTP2's codec, which checked its fields) in the member listener's
/// form: the head written as bytes once, so that the data plane reads one kind of head whatever the protocol.
public final class RequestHeadsAsBytes: ChannelInboundHandler, RemovableChannelHandler {
    public typealias InboundIn = HTTPServerRequestPart
    public typealias InboundOut = MemberRequestPart

    public init() {}

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head): context.fireChannelRead(wrapInboundOut(.head(RequestHead(head))))
        case .body(let chunk): context.fireChannelRead(wrapInboundOut(.body(chunk)))
        case .end(let trailers): context.fireChannelRead(wrapInboundOut(.end(trailers)))
        }
    }
}
