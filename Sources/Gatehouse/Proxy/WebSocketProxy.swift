import Foundation
import GatehouseCore
import GatehouseStorage
import HTTPTypes
import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOWebSocket

/// WebSocket upgrades to `/apps/<slug>/…`: the same checks as any proxied request (session, level, roles,
/// allowlist, jar cookies, identity headers) plus the `Origin` a browser must send, then frames are relayed both
/// ways until either side closes or the member's session ends.
public struct WebSocketProxy: Sendable {
    let catalog: AppCatalog
    let access: AppAccess
    let jars: SharedCookieJars
    let resolver: SessionResolver
    let sessions: any SessionStore
    let hostMounts: any HostMountStore
    let configuration: GatehouseConfiguration
    let draining: Draining
    let logger: Logger
    let clientAddresses: ClientAddressResolver

    /// How often a relay checks that the member is still signed in: a read of the state cache, so often enough that
    /// a sign-out anywhere closes the member's WebSockets within about a second too.
    var sessionCheckInterval: Duration = .milliseconds(500)
    static let maximumMessageBytes = 1 << 20
    var client: UpstreamWebSocket {
        UpstreamWebSocket(
            maximumMessageBytes: Self.maximumMessageBytes, connectTimeout: .seconds(Int64(configuration.proxy.connectTimeoutSeconds)),
            handshakeTimeout: .seconds(configuration.proxy.readTimeoutSeconds))
    }

    init(
        catalog: AppCatalog, access: AppAccess, jars: SharedCookieJars, resolver: SessionResolver, sessions: any SessionStore,
        hostMounts: any HostMountStore, configuration: GatehouseConfiguration, clientAddresses: ClientAddressResolver, draining: Draining,
        logger: Logger
    ) {
        self.hostMounts = hostMounts
        self.clientAddresses = clientAddresses
        self.catalog = catalog
        self.access = access
        self.jars = jars
        self.resolver = resolver
        self.sessions = sessions
        self.configuration = configuration
        self.draining = draining
        self.logger = logger
    }

    public typealias Decision = ShouldUpgradeResult<WebSocketDataHandler<HTTP1WebSocketUpgradeChannel.Context>>

    /// Whether to take over this connection; anything refused continues as a plain HTTP request (and fails there
    /// with the usual page).
    public func shouldUpgrade(_ head: HTTPRequest, peer: String?) async -> Decision {
        guard let target = await target(of: head) else { return .dontUpgrade }
        let (app, rest, session) = target
        let access: AppAccess.Forwarding
        do {
            access = try await self.access.open(app, rest: rest, method: "GET", session: session, returnTo: rest)
        } catch {
            // The fixed reason only: the error's text may hold the path's query.
            logger.notice("WebSocket refused", metadata: ["reason": .string((error as? any PresentableError)?.reason ?? "\(type(of: error))")])
            return .dontUpgrade
        }
        // The same headers a plain request to the app carries; the WebSocket client sets the handshake's own
        // (`Host`, `Origin`, `Sec-WebSocket-*`).
        let clientAddress = clientAddresses.resolve(peer: peer, forwardedFor: head.headerFields[values: .xForwardedFor])
        let cookie = try? await jars.cookieHeader(sessionID: session.id, for: access.origin)
        let trace = clientAddresses.trace(peer: peer, traceparent: head.headerFields[HeaderHygiene.traceparent])
        // The `Origin` checked above goes to the app mapped (`OriginMapping`), as an app that checks it (Jupyter) expects.
        var headers = access.requestHeaders(from: head.headerFields, clientAddress: clientAddress, cookie: cookie ?? nil, trace: trace)
        // The subprotocols the page offers, for the app to choose from (`UpstreamWebSocket.handshakeHeaders`).
        for offered in head.headerFields[values: UpstreamWebSocket.subprotocol] {
            headers.append(HTTPField(name: UpstreamWebSocket.subprotocol, value: offered))
        }
        // The app is reached before the browser is answered: the subprotocol it chooses goes into the browser's
        // handshake (a browser that offered some refuses an answer without one).
        let connection: Result<UpstreamWebSocket.Connection, any Error>
        do {
            connection = .success(try await client.connect(to: access.target, headers: headers))
        } catch {
            connection = .failure(error)
        }
        var answer = HTTPFields()
        if case .success(let upstream) = connection, let subprotocol = upstream.subprotocol {
            answer[UpstreamWebSocket.subprotocol] = subprotocol
        }
        let relay = Relay(
            connection: connection, sessionID: session.id, sessions: sessions, interval: sessionCheckInterval, draining: draining, logger: logger)
        return .upgrade(answer) { [draining] inbound, outbound, _ in
            try await draining.relaying { try await relay.run(browserInbound: inbound, browserOutbound: outbound) }
        }
    }

    /// The app, its path and the member's session for an upgrade request: on an app host through its grant cookie,
    /// on the gateway's host through `/apps/<slug>/…` and the session cookie. Cross-site WebSocket hijacking: the
    /// request's `Origin` must be the page's own host (the app host, or the gateway).
    func target(of head: HTTPRequest) async -> (AppConfiguration, String, Session)? {
        guard let path = head.path else { return nil }
        let origin = head.headerFields[.origin]
        if let app = catalog.hostMountedApp(authority: head.authority), let appsDomain = catalog.appsDomain {
            guard isOrigin(origin, of: appsDomain.origin(of: app.slug)),
                let token = Self.cookie(named: HostMountCookies.grant, in: head.headerFields),
                let sessionID = try? await hostMounts.sessionID(grantTokenHash: TokenHash.hex(token), slug: app.slug),
                case .active(let session)? = try? await resolver.resolve(sessionID: sessionID)
            else { return nil }
            return (app, path, session)
        }
        guard path.hasPrefix(Paths.appsPrefix + "/") else { return nil }
        guard isOrigin(origin, of: configuration.publicOrigin) else {
            logger.notice("WebSocket refused: foreign origin", metadata: ["origin": .string(origin ?? "(none)")])
            return nil
        }
        let afterPrefix = path.dropFirst(Paths.appsPrefix.count + 1)
        let slug = String(afterPrefix.prefix { $0 != "/" && $0 != "?" })
        let rest = String(afterPrefix.dropFirst(slug.count))
        guard let app = catalog.app(slug), catalog.isProxiedOnPaths(app), rest.hasPrefix("/"),
            case .active(let session)? = try? await resolver.resolve(cookie: Self.cookie(named: configuration.cookie.name, in: head.headerFields))
        else { return nil }
        return (app, rest, session)
    }

    /// A browser sends its page's origin exactly. Non-browser WebSocket clients (never a vehicle for another site's
    /// page) may name the same host with a ws/wss scheme instead.
    func isOrigin(_ origin: String?, of expected: String) -> Bool {
        guard let origin else { return false }
        if origin == expected { return true }
        guard let url = URL(string: origin), let scheme = url.scheme?.lowercased(), scheme == "ws" || scheme == "wss" else { return false }
        return url.host?.lowercased() == URL(string: expected)?.host?.lowercased()
    }

    static func cookie(named name: String, in fields: HTTPFields) -> String? {
        for header in fields[values: .cookie] {
            for pair in header.split(separator: ";") {
                let parts = pair.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
                if parts.count == 2, parts[0] == name { return String(parts[1]) }
            }
        }
        return nil
    }

    /// One relayed connection.
    struct Relay: Sendable {
        let connection: Result<UpstreamWebSocket.Connection, any Error>
        let sessionID: String
        let sessions: any SessionStore
        let interval: Duration
        let draining: Draining
        let logger: Logger

        /// Which side ended the relay, or the gateway's graceful shutdown.
        enum End { case browser, app, session, shutdown }

        func run(browserInbound: WebSocketInboundStream, browserOutbound: WebSocketOutboundWriter) async throws {
            let upstream: NIOAsyncChannel<WebSocketFrame, WebSocketFrame>
            switch connection {
            case .success(let connection): upstream = connection.channel
            case .failure(let error):
                logger.notice("WebSocket to app failed", metadata: ["reason": .string("\(error)")])
                try? await browserOutbound.close(.unexpectedServerError, reason: nil)
                return
            }
            let end = try await upstream.executeThenClose { appInbound, appOutbound -> End in
                let end = try await withThrowingTaskGroup(of: End.self) { group in
                    group.addTask {
                        for try await message in browserInbound.messages(maxSize: WebSocketProxy.maximumMessageBytes) {
                            switch message {
                            case .text(let text): try await appOutbound.write(Self.frame(.text, ByteBuffer(string: text)))
                            case .binary(let buffer): try await appOutbound.write(Self.frame(.binary, buffer))
                            }
                        }
                        return .browser
                    }
                    group.addTask { try await Self.relay(appInbound, replies: appOutbound, to: browserOutbound) }
                    group.addTask {
                        try await watchSession()
                        return .session
                    }
                    group.addTask {
                        await draining.wait()
                        try? await browserOutbound.close(.goingAway, reason: nil)
                        return .shutdown
                    }
                    // Whichever ends first (a side closed, the session ended) ends the relay.
                    defer { group.cancelAll() }
                    return try await group.next() ?? .browser
                }
                // The app closed first: its close was answered already.
                let code: WebSocketErrorCode = end == .shutdown ? .goingAway : .normalClosure
                if end != .app { try? await appOutbound.write(Self.frame(.connectionClose, Self.closeReason(code))) }
                return end
            }
            if end != .shutdown { try? await browserOutbound.close(.normalClosure, reason: nil) }
        }

        /// The app's messages to the browser; pings answered, and its close frame answered and ending the relay.
        static func relay(
            _ inbound: NIOAsyncChannelInboundStream<WebSocketFrame>, replies: NIOAsyncChannelOutboundWriter<WebSocketFrame>,
            to browser: WebSocketOutboundWriter
        ) async throws -> End {
            for try await received in inbound {
                let data = received.unmaskedData
                switch received.opcode {
                case .text:
                    guard let text = String(validating: data.readableBytesView, as: UTF8.self) else {
                        try await replies.write(frame(.connectionClose, closeReason(.dataInconsistentWithMessage)))
                        return .app
                    }
                    try await browser.write(.text(text))
                case .binary: try await browser.write(.binary(data))
                case .ping: try await replies.write(frame(.pong, data))
                case .connectionClose:
                    try await replies.write(frame(.connectionClose, closeReason(.normalClosure)))
                    return .app
                default: continue
                }
            }
            return .app
        }

        /// A client's frames are masked (RFC 6455 §5.3); the encoder applies the key.
        static func frame(_ opcode: WebSocketOpcode, _ data: ByteBuffer) -> WebSocketFrame {
            WebSocketFrame(fin: true, opcode: opcode, maskKey: .random(), data: data)
        }

        static func closeReason(_ code: WebSocketErrorCode) -> ByteBuffer {
            var buffer = ByteBuffer()
            buffer.write(webSocketErrorCode: code)
            return buffer
        }

        /// Returns when the member's session is gone (signed out, expired, ended on another replica).
        func watchSession() async throws {
            while true {
                try await Task.sleep(for: interval)
                if try await sessions.find(id: sessionID) == nil { return }
            }
        }
    }
}
