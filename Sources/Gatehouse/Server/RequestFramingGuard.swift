import GatehouseDataPlane
import NIOCore
import NIOHTTP1

/// Sits right after the HTTP/1 reader (`HTTP1RequestReader`) and makes every framing problem end the way RFC 9112
/// says: a status, then a closed connection, within the configured time. Without it a refused request would leave
/// the connection open with no answer, and a client that sends half a request or nothing at all would keep a
/// connection forever.
///
/// - What the reader refuses (malformed lines, `Host`, lengths and codings, sizes: its documentation) is answered
///   with the status it names.
/// - A head that does not arrive completely within `headerTimeout` of its first bytes: `408`; a body whose bytes stop
///   coming for `bodyTimeout` while the server is ready to read them: `408` (the request's reader fails, so nothing
///   takes the short body for a whole one); a connection with no request for `idleTimeout`: closed; a client that
///   takes nothing of an answer (the connection stays unwritable) for `sendTimeout`: closed, so that a reader that
///   never reads does not hold the connection, and the app's connection behind it, for ever.
/// - An HTTP/1.0 request is answered in HTTP/1.0: a body without a length is delimited by closing the connection
///   (1.0 has no chunked coding), and the connection is closed after the answer unless the client asked to keep it
///   alive and the answer has a length.
/// - While the gateway drains before shutting down, every answer says `Connection: close` and the connection closes
///   after it, so that clients go elsewhere without a request being lost.
/// - `Expect: 100-continue` on a request with a body is answered `100 Continue` when the head is accepted, so a
///   client that waits for it (curl does, for a second) sends its body at once.
///
/// A refused request never reaches the router, so nothing of it goes upstream. An error in a body already handed on
/// is passed on too, so the request's reader fails instead of seeing a short body as complete.
final class RequestFramingGuard: ChannelDuplexHandler {
    typealias InboundIn = MemberRequestPart
    typealias InboundOut = MemberRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    struct Limits: Sendable {
        var headerTimeout: TimeAmount
        var idleTimeout: TimeAmount
        var bodyTimeout: TimeAmount
        /// An answer the client takes nothing of for this long (the connection stays unwritable) ends the connection.
        var sendTimeout: TimeAmount
        /// The reader's limits: the target, the fields' bytes and their count.
        var reader: HTTP1RequestReader.Limits
    }

    private enum Inbound {
        /// Between requests, nothing of the next one seen.
        case awaitingHead
        /// Bytes of a head arrived, the head is not complete.
        case readingHead
        /// The head went on; its body is still arriving.
        case inBody
    }

    private let limits: Limits
    private let draining: Draining
    private var inbound = Inbound.awaitingHead
    private var responseInProgress = false
    /// A request was handed on and its response has not ended: the connection is busy, not idle.
    private var awaitingResponse = false
    private var isClosing = false
    private var readSinceLastComplete = false
    /// The server asked for more bytes and none came yet: only then does a silent body count against its deadline
    /// (while the server holds off reading, because the app takes the body slowly, the client is not to blame).
    private var readRequested = false
    /// Accepted requests whose answers have not begun, oldest first: how each must be answered.
    private var awaitingAnswer: [(version: HTTPVersion, keepAlive: Bool)] = []
    /// The answer under way ends the connection (an HTTP/1.0 client that did not ask to keep it).
    private var closeAfterResponse = false
    /// After a `101`, the connection carries WebSocket frames: everything passes untouched and untimed.
    private var isUpgraded = false
    /// The connection's one timer (`timerFired`), and the state its deadline was set for.
    private var timer: DeadlineTimer?
    private var timedState = Inbound.awaitingHead
    /// Runs while the connection cannot take more of what is written to it: a client that reads nothing.
    private var sendTimer: DeadlineTimer?

    init(limits: Limits, draining: Draining) {
        self.limits = limits
        self.draining = draining
    }

    func handlerAdded(context: ChannelHandlerContext) {
        timer = DeadlineTimer(eventLoop: context.eventLoop) { [weak self, weak context] in
            if let self, let context { self.timerFired(context) }
        }
        sendTimer = DeadlineTimer(eventLoop: context.eventLoop) { [weak context] in
            // The client took nothing for the whole send timeout: what it was sent cannot be finished.
            guard let context, !context.channel.isWritable else { return }
            context.close(promise: nil)
        }
        if context.channel.isActive { armTimer(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        armTimer(context)
        context.fireChannelActive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        sendTimer?.cancel()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            sendTimer?.stop()
        } else if sendTimer?.isSet == false {
            sendTimer?.set(in: limits.sendTimeout)
        }
        context.fireChannelWritabilityChanged()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !isUpgraded else {
            context.fireChannelRead(data)
            return
        }
        guard !isClosing else { return }
        readSinceLastComplete = true
        readRequested = false
        switch unwrapInboundIn(data) {
        case .head(let head):
            inbound = .inBody
            awaitingResponse = true
            awaitingAnswer.append((head.version, head.isKeepAlive))
            armTimer(context)
            if Self.expectsContinue(head) {
                context.writeAndFlush(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: .continue))), promise: nil)
            }
        case .body:
            armTimer(context)
        case .end:
            inbound = .awaitingHead
            armTimer(context)
        }
        context.fireChannelRead(data)
    }

    func read(context: ChannelHandlerContext) {
        readRequested = true
        context.read()
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        // Bytes arrived that made no part at all: a head is on its way (or trickling in).
        if inbound == .awaitingHead, !readSinceLastComplete, !isClosing, !isUpgraded {
            inbound = .readingHead
            armTimer(context)
        }
        readSinceLastComplete = false
        context.fireChannelReadComplete()
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard !isUpgraded else {
            context.write(data, promise: promise)
            return
        }
        switch unwrapOutboundIn(data) {
        case .head(var head):
            if head.status == .switchingProtocols {
                // From here on the connection carries WebSocket frames, not HTTP: hands off.
                isUpgraded = true
                cancelTimer()
            } else if head.status.code >= 200 {
                responseInProgress = true
                let request = awaitingAnswer.isEmpty ? nil : awaitingAnswer.removeFirst()
                if let request, request.version.major == 1, request.version.minor == 0 {
                    closeAfterResponse = !Self.answerHTTP10(&head, keepAlive: request.keepAlive && !draining.hasBegun)
                } else if draining.hasBegun {
                    head.headers.replaceOrAdd(name: "connection", value: "close")
                    closeAfterResponse = true
                }
                context.write(wrapOutboundOut(.head(head)), promise: promise)
                return
            } else if awaitingAnswer.first?.version.minor == 0 {
                promise?.succeed()  // HTTP/1.0 has no interim answers
                return
            }
            context.write(data, promise: promise)
        case .body:
            context.write(data, promise: promise)
        case .end:
            responseInProgress = false
            awaitingResponse = false
            if closeAfterResponse {
                isClosing = true
                cancelTimer()
                context.writeAndFlush(data).assumeIsolated().whenComplete { result in
                    promise?.completeWith(result)
                    context.close(promise: nil)
                }
                return
            }
            context.write(data, promise: promise)
            armTimer(context)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard !isUpgraded, let refusal = error as? RequestFramingError else {
            context.fireErrorCaught(error)
            return
        }
        refuse(refusal.status, context: context, cause: error)
    }

    // MARK: - Timers

    /// Idle between requests, waiting for the rest of a head, or for more of a body; nothing while the app works on
    /// a complete request or its response is under way. Each request moves the one timer's deadline (`DeadlineTimer`).
    private func armTimer(_ context: ChannelHandlerContext) {
        guard !isClosing, !isUpgraded else { return cancelTimer() }
        let timeout: TimeAmount
        switch inbound {
        case .inBody:
            timeout = limits.bodyTimeout
        case .awaitingHead:
            // Not while the app is still working on the last request or answering it.
            guard !responseInProgress, !awaitingResponse else { return cancelTimer() }
            timeout = limits.idleTimeout
        case .readingHead:
            guard !responseInProgress else { return cancelTimer() }
            timeout = limits.headerTimeout
        }
        timedState = inbound
        timer?.set(in: timeout)
    }

    private func cancelTimer() {
        timer?.stop()
    }

    /// A deadline passed in the state it was set for. A body's bytes must keep arriving; when its deadline passes
    /// while the server is not asking for bytes (it waits for the app to take what it has), the deadline starts
    /// again instead: only the client's silence counts.
    private func timerFired(_ context: ChannelHandlerContext) {
        guard !isClosing, inbound == timedState else { return }
        switch inbound {
        case .awaitingHead:
            guard !responseInProgress, !awaitingResponse else { return }
            isClosing = true
            context.close(promise: nil)
        case .readingHead:
            refuse(.requestTimeout, context: context)
        case .inBody:
            if readRequested {
                refuse(.requestTimeout, context: context)
            } else {
                armTimer(context)
            }
        }
    }

    // MARK: - Refusing

    /// Answers `status` (when no response is under way) and closes the connection. What reads the connection
    /// further on is told why: a request already handed on fails with `cause` instead of ending early as if its
    /// body were complete; otherwise the input is simply closed (which the server treats as a quiet end).
    private func refuse(_ status: HTTPResponseStatus, context: ChannelHandlerContext, cause: (any Error)? = nil) {
        guard !isClosing else { return }
        isClosing = true
        cancelTimer()
        let handedOn = inbound == .inBody
        let close = {
            if handedOn {
                context.fireErrorCaught(cause ?? ChannelError.inputClosed)
            } else {
                context.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
            }
            context.close(promise: nil)
        }
        guard !responseInProgress else {
            close()
            return
        }
        let text = "\(status.code) \(status.reasonPhrase)\n"
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "text/plain; charset=utf-8")
        headers.add(name: "Content-Length", value: "\(text.utf8.count)")
        headers.add(name: "Connection", value: "close")
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(string: text)))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in close() }
    }

    /// Makes `head` an HTTP/1.0 answer and says whether the connection may stay open after it: only when the client
    /// asked (`Connection: keep-alive`) and the answer has a length; otherwise it says `Connection: close`, and a
    /// body without a length is written as it comes, ended by the close.
    static func answerHTTP10(_ head: inout HTTPResponseHead, keepAlive: Bool) -> Bool {
        head.version = .http1_0
        head.headers.remove(name: "transfer-encoding")
        let keep = keepAlive && head.headers.contains(name: "content-length")
        head.headers.replaceOrAdd(name: "connection", value: keep ? "keep-alive" : "close")
        return keep
    }

    /// `Expect: 100-continue` on an HTTP/1.1 request that has a body (RFC 9110 §10.1.1); other expectations are left
    /// to the application.
    static func expectsContinue(_ head: RequestHead) -> Bool {
        guard head.version.major == 1, head.version.minor >= 1,
            head.values("expect").contains(where: { $0.lowercased() == "100-continue" })
        else { return false }
        return head.contains("transfer-encoding") || head.values("content-length").contains { $0 != "0" }
    }
}
