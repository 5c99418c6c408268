import Foundation
import GatehouseCore
import GatehouseDataPlane
import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// A WebSocket connection to an app, opened to exactly the address `UpstreamPolicy` checked (DNS rebinding), with
/// the app's own name in `Host` and as the TLS server name, on the member connection's event loop. The handshake is
/// the browser's own, passed on (its key, version, offered subprotocols and extensions), so that the app's answer
/// (its accept key, the subprotocol and extensions it chose) is valid for the browser as it is; once the app answered
/// `101` the connection carries frames only and ends in the tunnel's app side (`TunnelSide`).
struct UpstreamWebSocket {
    enum Failure: Error, CustomStringConvertible {
        case upgradeRefused(HTTPResponseStatus)
        case handshakeTimeout

        var description: String {
            switch self {
            case .upgradeRefused(let status): "the app refused the WebSocket upgrade (\(status.code))"
            case .handshakeTimeout: "the app did not answer the WebSocket upgrade in time"
            }
        }
    }

    /// An upgraded connection to the app.
    struct Connection: Sendable {
        /// The app's `101`, its handshake fields for the browser's.
        let answer: HTTPResponseHead
        let channel: any Channel
    }

    let connectTimeout: TimeAmount
    let handshakeTimeout: TimeAmount

    /// Connects on `eventLoop` and sends the upgrade request with `headers` (the gateway's, and the browser's
    /// handshake fields from `browser`) and `Host`; answers once the app said `101`.
    func connect(to target: UpstreamTarget, headers: HTTPFields, browser: HTTPFields, on eventLoop: any EventLoop) async throws -> Connection {
        let secure = target.url.scheme?.lowercased() == "https"
        let port = target.url.port ?? (secure ? 443 : 80)
        let address = try SocketAddress(ipAddress: target.address ?? Self.literal(target.host), port: port)
        let sslContext = secure ? try target.tls?.context ?? NIOSSLContext(configuration: .makeClientConfiguration()) : nil
        // A name goes into SNI; an address literal must not (RFC 6066 §3).
        let serverName = target.address == nil ? nil : target.host
        let head = HTTPRequestHead(
            version: .http1_1, method: .GET, uri: Self.requestTarget(of: target.url),
            headers: Self.handshakeHeaders(headers, browser: browser, host: Self.hostField(of: target.url)))
        let answered = eventLoop.makePromise(of: HTTPResponseHead.self)
        let channel = try await ClientBootstrap(group: eventLoop)
            .connectTimeout(connectTimeout)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    if let sslContext {
                        try pipeline.addHandler(NIOSSLClientHandler(context: sslContext, serverHostname: serverName))
                    }
                    let http: [any RemovableChannelHandler] = [
                        HTTPRequestEncoder(), ByteToMessageHandler(HTTPResponseDecoder(leftOverBytesStrategy: .forwardBytes)),
                        NIOHTTPRequestHeadersValidator(),
                    ]
                    try pipeline.addHandlers(http)
                    try pipeline.addHandler(Handshake(answered: answered, http: http))
                }
            }
            .connect(to: address).get()
        let timeout = eventLoop.scheduleTask(in: handshakeTimeout) { answered.fail(Failure.handshakeTimeout) }
        channel.write(HTTPClientRequestPart.head(head), promise: nil)
        channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
        do {
            let answer = try await answered.futureResult.get()
            timeout.cancel()
            return Connection(answer: answer, channel: channel)
        } catch {
            timeout.cancel()
            channel.close(promise: nil)
            throw error
        }
    }

    /// Reads the app's answer to the upgrade request. A `101` is complete at its end: the HTTP handlers leave the
    /// pipeline, and what the app sent after it (the decoder's left-over bytes) goes to the tunnel's side.
    final class Handshake: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = HTTPClientResponsePart

        let answered: EventLoopPromise<HTTPResponseHead>
        /// The handlers that speak HTTP, which leave with the handshake.
        let http: [any RemovableChannelHandler]
        private var head: HTTPResponseHead?

        init(answered: EventLoopPromise<HTTPResponseHead>, http: [any RemovableChannelHandler]) {
            self.answered = answered
            self.http = http
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head) where head.status == .switchingProtocols:
                self.head = head
            case .head(let head):
                answered.fail(Failure.upgradeRefused(head.status))
                context.close(promise: nil)
            case .body:
                return
            case .end:
                guard let head else { return }
                do {
                    let pipeline = context.pipeline.syncOperations
                    pipeline.removeHandler(context: context, promise: nil)
                    try pipeline.addHandler(TunnelSide(.app))
                    for handler in http { pipeline.removeHandler(handler, promise: nil) }
                    answered.succeed(head)
                } catch {
                    answered.fail(error)
                    context.close(promise: nil)
                }
            }
        }

        func channelInactive(context: ChannelHandlerContext) {
            answered.fail(ChannelError.eof)
            context.fireChannelInactive()
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            answered.fail(error)
            context.close(promise: nil)
        }
    }

    /// The request to the app: the gateway's fields, `Host`, and the browser's handshake fields (`Upgrade`,
    /// `Connection: Upgrade` and the `Sec-WebSocket-*` ones: the key and version, the subprotocols the page offers and
    /// the extensions the browser proposes), for the app to choose from.
    static func handshakeHeaders(_ fields: HTTPFields, browser: HTTPFields, host: String) -> HTTPHeaders {
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: host)
        for field in fields {
            let name = field.name.canonicalName
            if name == "host" || name == "connection" || name == "upgrade" || name.hasPrefix("sec-websocket-") { continue }
            headers.add(name: field.name.rawName, value: field.value)
        }
        headers.add(name: "Upgrade", value: "websocket")
        headers.add(name: "Connection", value: "Upgrade")
        for field in browser where field.name.canonicalName.hasPrefix("sec-websocket-") {
            headers.add(name: field.name.rawName, value: field.value)
        }
        return headers
    }

    static func requestTarget(of url: URL) -> String {
        let path = url.path(percentEncoded: true)
        let query = url.query(percentEncoded: true).map { "?" + $0 } ?? ""
        return (path.isEmpty ? "/" : path) + query
    }

    /// `Host` as the app's URL names it: the name (or literal) and a port only when it is not the scheme's own.
    static func hostField(of url: URL) -> String {
        let host = url.host(percentEncoded: false) ?? ""
        let literal = host.contains(":") ? "[\(host)]" : host
        guard let port = url.port else { return literal }
        let secure = url.scheme?.lowercased() == "https"
        return port == (secure ? 443 : 80) ? literal : "\(literal):\(port)"
    }

    /// An IPv6 literal as URLs write it, without brackets.
    static func literal(_ host: String) -> String {
        host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
    }
}
