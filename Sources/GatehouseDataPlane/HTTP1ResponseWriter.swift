import NIOCore
import NIOHTTP1

/// The member listener's HTTP/1.1 writer: answer heads written as bytes, bodies framed by their length or in chunks
/// (RFC 9112 §6), as NIO's `HTTPResponseEncoder` frames them. `HTTP1RequestReader` tells it each request's method
/// (`requestRead`), so that the answer to a `HEAD` or a `CONNECT` carries no body and no chunked framing: its
/// length, if the app gave one, is what a `GET` would have had.
public final class HTTP1ResponseWriter: ChannelOutboundHandler, RemovableChannelHandler {
    public typealias OutboundIn = HTTPServerResponsePart
    public typealias OutboundOut = IOData

    /// The methods of the requests read and not yet answered, oldest first.
    private var methods = CircularBuffer<HTTPMethod>(initialCapacity: 2)
    private var isChunked = false
    private var suppressesBody = false

    public init() {}

    /// Called by the reader, on the connection's event loop, for each request head it hands on.
    func requestRead(_ method: HTTPMethod) {
        methods.append(method)
    }

    public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(var head):
            let code = head.status.code
            // An interim answer (but `101`) is followed by the final one, which answers the same request.
            if !(100..<200).contains(code) || code == 101, let method = methods.popFirst() {
                suppressesBody = method == .HEAD || method == .CONNECT
                isChunked = Self.frame(&head, noBody: method == .CONNECT || !head.status.mayHaveResponseBody) && !suppressesBody
            } else {
                suppressesBody = false
                isChunked = Self.frame(&head, noBody: !head.status.mayHaveResponseBody)
            }
            var buffer = context.channel.allocator.buffer(capacity: 64 + head.headers.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count + 4 })
            Self.write(head, into: &buffer)
            context.write(wrapOutboundOut(.byteBuffer(buffer)), promise: promise)
        case .body(let chunk):
            if suppressesBody {
                promise?.fail(NIOHTTPResponseEncoderError.responseBodyNotAllowed)
            } else if isChunked, chunk.readableBytes > 0 {
                var size = context.channel.allocator.buffer(capacity: 16)
                size.writeString(String(chunk.readableBytes, radix: 16))
                size.writeStaticString("\r\n")
                context.write(wrapOutboundOut(.byteBuffer(size)), promise: nil)
                context.write(wrapOutboundOut(chunk), promise: nil)
                context.write(wrapOutboundOut(.byteBuffer(Self.lineEnd)), promise: promise)
            } else {
                context.write(wrapOutboundOut(chunk), promise: promise)
            }
        case .end(let trailers):
            suppressesBody = false
            if isChunked {
                isChunked = false
                var buffer = context.channel.allocator.buffer(capacity: 8)
                buffer.writeStaticString("0\r\n")
                for (name, value) in trailers ?? [:] { Self.write(name: name, value: value, into: &buffer) }
                buffer.writeStaticString("\r\n")
                context.write(wrapOutboundOut(.byteBuffer(buffer)), promise: promise)
            } else if let promise {
                // Nothing to write, but the promise completes in order.
                context.write(wrapOutboundOut(.byteBuffer(context.channel.allocator.buffer(capacity: 0))), promise: promise)
            }
        }
    }

    private static let lineEnd = ByteBuffer(staticString: "\r\n")

    /// Sets the framing fields for an answer with a body or without; `true` when its body goes in chunks.
    static func frame(_ head: inout HTTPResponseHead, noBody: Bool) -> Bool {
        if noBody {
            head.headers.remove(name: "content-length")
            head.headers.remove(name: "transfer-encoding")
            return false
        }
        if head.headers.contains(name: "content-length") {
            head.headers.remove(name: "transfer-encoding")
            return false
        }
        guard head.version.major == 1, head.version.minor >= 1 else {
            // HTTP/1.0: the body ends with the connection.
            head.headers.remove(name: "transfer-encoding")
            return false
        }
        head.headers.replaceOrAdd(name: "transfer-encoding", value: "chunked")
        return true
    }

    /// `HTTP/1.1 200 OK` CRLF, the fields, CRLF.
    static func write(_ head: HTTPResponseHead, into buffer: inout ByteBuffer) {
        buffer.writeStaticString("HTTP/")
        buffer.writeString(String(head.version.major))
        buffer.writeStaticString(".")
        buffer.writeString(String(head.version.minor))
        buffer.writeStaticString(" ")
        buffer.writeString(String(head.status.code))
        buffer.writeStaticString(" ")
        buffer.writeString(head.status.reasonPhrase)
        buffer.writeStaticString("\r\n")
        for (name, value) in head.headers { write(name: name, value: value, into: &buffer) }
        buffer.writeStaticString("\r\n")
    }

    @inline(__always) static func write(name: String, value: String, into buffer: inout ByteBuffer) {
        buffer.writeString(name)
        buffer.writeStaticString(": ")
        buffer.writeString(value)
        buffer.writeStaticString("\r\n")
    }
}
