import NIOCore

/// A WebSocket between a member and an app once both handshakes are done: the bytes of each side go to the other
/// as they are, on the member's event loop (the app's connection is made on the same loop), the way nginx relays an
/// upgraded connection. The frames are the browser's and the app's own: masks, fragments and extensions the two
/// negotiated end to end (`permessage-deflate`) pass untouched, and a message is as large as the app allows.
///
/// Each side is read only while the other takes its bytes, so a side that stops reading holds the other's at a read's
/// worth. Each side follows where the frames it sends begin, so that the gateway can end the tunnel with a close frame
/// of its own (`end`): "going away" at a shutdown, a normal close when the member's session ends.
///
/// `end` and `closeFuture` may be used from any thread; the sides run on the event loop.
public final class WebSocketTunnel: @unchecked Sendable {
    let member: TunnelSide
    let app: TunnelSide
    private let eventLoop: any EventLoop
    /// Closed when the member's connection is (the app's closes with it).
    public let closeFuture: EventLoopFuture<Void>

    /// Joins the two sides, each already in its connection's pipeline, and lets through what the app sent so far.
    init(member: TunnelSide, app: TunnelSide) throws {
        guard let memberChannel = member.context?.channel, let appChannel = app.context?.channel,
            memberChannel.eventLoop === appChannel.eventLoop
        else { throw ChannelError.ioOnClosedChannel }
        self.member = member
        self.app = app
        eventLoop = memberChannel.eventLoop
        closeFuture = memberChannel.closeFuture
        member.join(app)
        app.join(member)
    }

    /// Ends the tunnel from the gateway's side: a close frame with `code` (RFC 6455 §7.4.1) to each side whose frames
    /// are at a boundary, then both connections close.
    public func end(_ code: UInt16) {
        eventLoop.execute {
            // Both frames first: the first side's close closes the other at once.
            self.member.sendClose(code)
            self.app.sendClose(code)
            self.member.close()
            self.app.close()
        }
    }
}

/// One side of a `WebSocketTunnel`, the last handler that sees its connection's bytes: the member's, in the data
/// plane's place, or the app's, added once the app answered `101`. Until the two are joined it holds what its
/// connection sends (an app may speak right after its handshake) and reads no more.
public final class TunnelSide: ChannelDuplexHandler, RemovableChannelHandler {
    public typealias InboundIn = ByteBuffer
    public typealias OutboundIn = ByteBuffer
    public typealias OutboundOut = ByteBuffer

    public enum Role {
        /// The member's connection: the gateway speaks to it as a server (unmasked frames).
        case member
        /// The app's: the gateway speaks to it as a client (masked frames, RFC 6455 §5.3).
        case app
    }

    let role: Role
    private(set) var context: ChannelHandlerContext?
    private var partner: TunnelSide?
    /// Where the frames this side writes begin.
    private var outgoing = FrameBoundaries()
    private var held: [ByteBuffer] = []
    private var readHeld = false
    /// The gateway's close frame went out: nothing of the peer's follows it.
    private var closeSent = false
    private var isClosed = false

    public init(_ role: Role) {
        self.role = role
    }

    public func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    public func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        partner = nil
    }

    func join(_ partner: TunnelSide) {
        self.partner = partner
        for bytes in held { partner.send(bytes) }
        held.removeAll()
        partner.context?.flush()
        if isClosed { partner.close() }
        // Reads this side's connection was asked for before (or the place it took held back) come now.
        readHeld = true
        resumeReading()
    }

    // MARK: - Inbound: what this side's peer sends

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = unwrapInboundIn(data)
        if let partner { partner.send(bytes) } else { held.append(bytes) }
    }

    public func channelReadComplete(context: ChannelHandlerContext) {
        partner?.context?.flush()
    }

    public func read(context: ChannelHandlerContext) {
        guard partner?.context?.channel.isWritable == true else {
            readHeld = true
            return
        }
        context.read()
    }

    public func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { partner?.resumeReading() }
        context.fireChannelWritabilityChanged()
    }

    public func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case is ChannelShouldQuiesceEvent:
            // The application's shutdown would close an idle connection: the gateway ends the tunnel itself.
            return
        case ChannelEvent.inputClosed:
            closed(context: context)
        default:
            context.fireUserInboundEventTriggered(event)
        }
    }

    public func channelInactive(context: ChannelHandlerContext) {
        closed(context: context)
        context.fireChannelInactive()
    }

    public func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    // MARK: - Outbound: what this side sends its peer

    private func send(_ bytes: ByteBuffer) {
        guard !isClosed, !closeSent, let context else { return }
        outgoing.pass(bytes)
        context.write(wrapOutboundOut(bytes), promise: nil)
    }

    private func resumeReading() {
        guard readHeld, let context, partner?.context?.channel.isWritable == true else { return }
        readHeld = false
        context.read()
    }

    /// This side's connection is over: the other side closes too.
    private func closed(context: ChannelHandlerContext) {
        isClosed = true
        partner?.close()
        context.close(promise: nil)
    }

    /// Sends a close frame with `code` when the frames this side sends are at a boundary.
    func sendClose(_ code: UInt16) {
        guard let context, !isClosed, !closeSent else { return }
        closeSent = true
        if outgoing.atBoundary { context.write(wrapOutboundOut(Self.closeFrame(code, masked: role == .app)), promise: nil) }
    }

    /// Closes this side's connection once what it was sent is out.
    func close() {
        guard let context, !isClosed else { return }
        isClosed = true
        context.writeAndFlush(wrapOutboundOut(ByteBuffer())).assumeIsolated().whenComplete { _ in context.close(promise: nil) }
    }

    /// A close frame with a status code and no reason (RFC 6455 §5.5.1), masked as a client's must be.
    static func closeFrame(_ code: UInt16, masked: Bool) -> ByteBuffer {
        var frame = ByteBuffer()
        frame.writeInteger(UInt8(0x88))
        guard masked else {
            frame.writeInteger(UInt8(2))
            frame.writeInteger(code)
            return frame
        }
        let key = (0..<4).map { _ in UInt8.random(in: 0...255) }
        frame.writeInteger(UInt8(0x80 | 2))
        frame.writeBytes(key)
        frame.writeInteger(UInt8(truncatingIfNeeded: code >> 8) ^ key[0])
        frame.writeInteger(UInt8(truncatingIfNeeded: code) ^ key[1])
        return frame
    }
}

/// Where one direction's frames begin (RFC 6455 §5.2): the header of each frame is read as it passes and its payload
/// counted off, so that a frame of the gateway's own may go between two of the peer's.
struct FrameBoundaries {
    /// Payload bytes of the current frame still to pass.
    private var payloadLeft: UInt64 = 0
    /// The bytes of a frame header seen so far (a header may come in pieces).
    private var header: [UInt8] = []

    var atBoundary: Bool { payloadLeft == 0 && header.isEmpty }

    mutating func pass(_ bytes: ByteBuffer) {
        var view = bytes.readableBytesView
        while !view.isEmpty {
            if payloadLeft > 0 {
                let skipped = Int(min(payloadLeft, UInt64(view.count)))
                view = view.dropFirst(skipped)
                payloadLeft -= UInt64(skipped)
                continue
            }
            header.append(view.removeFirst())
            if let length = Self.payloadLength(header) {
                payloadLeft = length
                header.removeAll(keepingCapacity: true)
            }
        }
    }

    /// The payload's length once `header` is a whole frame header, `nil` while it is not yet.
    static func payloadLength(_ header: [UInt8]) -> UInt64? {
        guard header.count >= 2 else { return nil }
        let masked = header[1] & 0x80 != 0
        let short = UInt64(header[1] & 0x7F)
        let lengthBytes = short == 126 ? 2 : short == 127 ? 8 : 0
        guard header.count == 2 + lengthBytes + (masked ? 4 : 0) else { return nil }
        guard lengthBytes > 0 else { return short }
        return header[2..<(2 + lengthBytes)].reduce(0) { $0 << 8 | UInt64($1) }
    }
}
