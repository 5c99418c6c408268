import NIOCore
import NIOHTTP1

/// A request head as the app's connection gets it, written into bytes once by the gateway: the request line,
/// `Host`, the fields, the body's length. No `HTTPHeaders` is made for it and no encoder sits on the app's
/// connection (`UpstreamPools.setUp`).
public struct UpstreamRequestHead {
    public let method: HTTPMethod
    public let bytes: ByteBuffer

    /// `fields` are legal as they come (names are tokens, values hold no line breaks, as `HTTPFields` keeps them);
    /// whatever frames the message (`Host`, `Content-Length`, `Transfer-Encoding`) is the head's own and must not be
    /// among them. `nil` when the target or the host holds a byte a request line or a field may not.
    public init?(method: HTTPMethod, target: String, host: String, bodyLength: Int, fields: some Sequence<(name: String, value: String)>) {
        guard Self.isVisibleASCII(target), !target.isEmpty, Self.isVisibleASCII(host) else { return nil }
        self.method = method
        var bytes = ByteBuffer()
        bytes.reserveCapacity(512)
        bytes.writeString(method.rawValue)
        bytes.writeStaticString(" ")
        bytes.writeString(target)
        bytes.writeStaticString(" HTTP/1.1\r\nhost: ")
        bytes.writeString(host)
        bytes.writeStaticString("\r\n")
        for (name, value) in fields {
            bytes.writeString(name)
            bytes.writeStaticString(": ")
            bytes.writeString(value)
            bytes.writeStaticString("\r\n")
        }
        // A request other than a `GET` says its body's length even when it is empty (without one, a `POST` would
        // need chunked framing to say it has none).
        if bodyLength > 0 || method != .GET {
            bytes.writeStaticString("content-length: ")
            bytes.writeString(String(bodyLength))
            bytes.writeStaticString("\r\n")
        }
        bytes.writeStaticString("\r\n")
        self.bytes = bytes
    }

    static func isVisibleASCII(_ text: String) -> Bool {
        text.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }
    }
}

/// NIO's response decoder without its watch on the requests written (which takes `HTTPClientRequestPart`s): the
/// data plane writes its heads as bytes and tells the decoder which method each answer is for
/// (`UpstreamConnectionHandler.expectAnswer`), so that it knows when an answer has no body.
struct UpstreamResponseDecoder: ByteToMessageDecoder {
    typealias InboundOut = HTTPClientResponsePart
    let decoder: HTTPResponseDecoder

    func decoderAdded(context: ChannelHandlerContext) {
        decoder.decoderAdded(context: context)
    }

    func decoderRemoved(context: ChannelHandlerContext) {
        decoder.decoderRemoved(context: context)
    }

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        try decoder.decode(context: context, buffer: &buffer)
    }

    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        try decoder.decodeLast(context: context, buffer: &buffer, seenEOF: seenEOF)
    }
}
