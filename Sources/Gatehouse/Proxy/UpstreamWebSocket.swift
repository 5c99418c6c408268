import Foundation
import GatehouseCore
import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOWebSocket

/// A WebSocket connection to an app, opened to exactly the address `UpstreamPolicy` checked (DNS rebinding), with
/// the app's own name in `Host` and as the TLS server name. Hummingbird's WebSocket client only connects to a name,
/// which it resolves again; this one takes the checked address and leaves the name to the handshake.
struct UpstreamWebSocket {
    enum Failure: Error, CustomStringConvertible {
        case upgradeRefused
        case handshakeTimeout

        var description: String {
            switch self {
            case .upgradeRefused: "the app refused the WebSocket upgrade"
            case .handshakeTimeout: "the app did not answer the WebSocket upgrade in time"
            }
        }
    }

    enum UpgradeResult: Sendable {
        /// The channel, and the subprotocol the app chose (`Sec-WebSocket-Protocol`), if any.
        case upgraded(NIOAsyncChannel<WebSocketFrame, WebSocketFrame>, subprotocol: String?)
        case refused
    }

    /// An upgraded connection to the app.
    struct Connection: Sendable {
        let channel: NIOAsyncChannel<WebSocketFrame, WebSocketFrame>
        /// The subprotocol the app chose of those the browser offered, for the browser's handshake.
        let subprotocol: String?
    }

    static let subprotocol = HTTPField.Name("Sec-WebSocket-Protocol")!

    /// Messages from the app are reassembled from their fragments up to this size; a larger one closes the relay.
    let maximumMessageBytes: Int
    let connectTimeout: TimeAmount
    let handshakeTimeout: Duration

    /// Connects, sends the upgrade request with `headers` (plus `Host` and the `Sec-WebSocket-*` fields, the browser's
    /// offered subprotocols among them) and answers the upgraded channel, whose frames are whole messages and control
    /// frames, with the subprotocol the app chose.
    func connect(to target: UpstreamTarget, headers: HTTPFields) async throws -> Connection {
        let secure = target.url.scheme?.lowercased() == "https"
        let port = target.url.port ?? (secure ? 443 : 80)
        let address = try SocketAddress(ipAddress: target.address ?? Self.literal(target.host), port: port)
        let sslContext = secure ? try target.tls?.context ?? NIOSSLContext(configuration: .makeClientConfiguration()) : nil
        // A name goes into SNI; an address literal must not (RFC 6066 §3).
        let serverName = target.address == nil ? nil : target.host
        let head = HTTPRequestHead(
            version: .http1_1, method: .GET, uri: Self.requestTarget(of: target.url),
            headers: Self.handshakeHeaders(headers, host: Self.hostField(of: target.url)))
        let maximumMessageBytes = maximumMessageBytes

        let upgrade = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(connectTimeout)
            .connect(to: address) { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let sslContext {
                        try channel.pipeline.syncOperations.addHandler(NIOSSLClientHandler(context: sslContext, serverHostname: serverName))
                    }
                    let upgrader = NIOTypedWebSocketClientUpgrader<UpgradeResult>(maxFrameSize: maximumMessageBytes) { channel, response in
                        channel.eventLoop.makeCompletedFuture {
                            try channel.pipeline.syncOperations.addHandler(
                                NIOWebSocketFrameAggregator(
                                    minNonFinalFragmentSize: 0, maxAccumulatedFrameCount: 1 << 12, maxAccumulatedFrameSize: maximumMessageBytes))
                            return .upgraded(
                                try NIOAsyncChannel(wrappingChannelSynchronously: channel),
                                subprotocol: response.headers.first(name: "sec-websocket-protocol"))
                        }
                    }
                    var configuration = NIOUpgradableHTTPClientPipelineConfiguration(
                        upgradeConfiguration: .init(
                            upgradeRequestHead: head, upgraders: [upgrader],
                            notUpgradingCompletionHandler: { channel in channel.close().map { .refused } }))
                    configuration.leftOverBytesStrategy = .forwardBytes
                    return try channel.pipeline.syncOperations.configureUpgradableHTTPClientPipeline(configuration: configuration)
                }
            }
        let result = try await withTimeout(handshakeTimeout, { try await upgrade.get() }, expired: { Failure.handshakeTimeout })
        guard case .upgraded(let channel, let subprotocol) = result else { throw Failure.upgradeRefused }
        return Connection(channel: channel, subprotocol: subprotocol)
    }

    /// The browser's handshake fields are the relay's business, never the app's: the client sets its own
    /// `Sec-WebSocket-Key`/`-Version`, and extensions (compression) are not negotiated through the relay (the browser
    /// gets none back, which declines them). The subprotocols the page offered go to the app, which chooses.
    static func handshakeHeaders(_ fields: HTTPFields, host: String) -> HTTPHeaders {
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: host)
        for field in fields {
            let name = field.name.canonicalName
            if name == "host" || name == "connection" || name == "upgrade" { continue }
            if name.hasPrefix("sec-websocket-") && name != "sec-websocket-protocol" { continue }
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
