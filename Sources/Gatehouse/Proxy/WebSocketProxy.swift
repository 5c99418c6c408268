import Foundation
import GatehouseCore
import GatehouseDataPlane
import GatehouseStorage
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypesHTTP1

/// WebSocket upgrades to `/apps/<slug>/…` and on app hosts, on any request of a connection (the data plane asks,
/// `DataPlaneUpgrades`): the same checks as any proxied request (session, level, roles, allowlist, jar cookies,
/// identity headers) plus the `Origin` a browser must send; then the app's own handshake, whose `101` goes to the
/// browser, and the two connections joined (`WebSocketTunnel`) until either side closes, the member's session ends
/// or the gateway shuts down.
public struct WebSocketProxy: DataPlaneUpgrades {
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

    /// How often a tunnel checks that the member is still signed in: a read of the state cache, so often enough that
    /// a sign-out anywhere closes the member's WebSockets within about a second too.
    var sessionCheckInterval: Duration = .milliseconds(500)
    var client: UpstreamWebSocket {
        UpstreamWebSocket(
            connectTimeout: .seconds(Int64(configuration.proxy.connectTimeoutSeconds)),
            handshakeTimeout: .seconds(Int64(configuration.proxy.readTimeoutSeconds)))
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

    public func upgrade(_ head: HTTPRequestHead, peer: SocketAddress?, eventLoop: any EventLoop) -> EventLoopFuture<DataPlaneUpgrade> {
        let promise = eventLoop.makePromise(of: DataPlaneUpgrade.self)
        promise.completeWithTask {
            guard let request = try? HTTPRequest(head, secure: configuration.listen.tls != nil, splitCookie: false) else { return .application }
            return await upgrade(request, peer: peer?.ipAddress, eventLoop: eventLoop)
        }
        return promise.futureResult
    }

    /// A tunnel to the app, or the plain request's way for anything refused (which fails there with the usual page).
    func upgrade(_ head: HTTPRequest, peer: String?, eventLoop: any EventLoop) async -> DataPlaneUpgrade {
        let clientAddress = clientAddresses.resolve(peer: peer, forwardedFor: head.headerFields[values: .xForwardedFor])
        let clientIP = clientAddress.flatMap(IPAddress.init)
        guard let (app, rest, session, idle) = await target(of: head, client: clientIP) else { return .application }
        let access: AppAccess.Forwarding
        do {
            access = try await self.access.open(
                app, rest: rest, method: "GET", session: session, moment: AccessMoment(client: clientIP, idle: idle), returnTo: rest)
        } catch {
            // The fixed reason only: the error's text may hold the path's query.
            logger.notice("WebSocket refused", metadata: ["reason": .string((error as? any PresentableError)?.reason ?? "\(type(of: error))")])
            return .application
        }
        // The same headers a plain request to the app carries; the handshake's own are the browser's.
        let cookie = try? await jars.cookieHeader(sessionID: session.id, for: access.origin)
        let trace = clientAddresses.trace(peer: peer, traceparent: head.headerFields[HeaderHygiene.traceparent])
        // The `Origin` checked above goes to the app mapped (`OriginMapping`), as an app that checks it (Jupyter) expects.
        let headers = access.requestHeaders(from: head.headerFields, clientAddress: clientAddress, cookie: cookie ?? nil, trace: trace)
        let upstream: UpstreamWebSocket.Connection
        do {
            upstream = try await client.connect(to: access.target, headers: headers, browser: head.headerFields, on: eventLoop)
        } catch {
            logger.notice("WebSocket to app failed", metadata: ["reason": .string("\(error)")])
            return .application
        }
        return .tunnel(Self.answer(upstream.answer), upstream: upstream.channel) { [self, sessionID = session.id, clientIP] tunnel in
            watch(tunnel, sessionID: sessionID, app: app, rest: rest, client: clientIP)
        }
    }

    /// The browser's `101`: the app's handshake fields only (its accept key for the browser's key, the subprotocol and
    /// extensions it chose), nothing else of the app's.
    static func answer(_ app: HTTPResponseHead) -> HTTPResponseHead {
        var headers = HTTPHeaders([("Upgrade", "websocket"), ("Connection", "Upgrade")])
        for (name, value) in app.headers where name.lowercased().hasPrefix("sec-websocket-") {
            headers.add(name: name, value: value)
        }
        return HTTPResponseHead(version: .http1_1, status: .switchingProtocols, headers: headers)
    }

    /// Ends `tunnel` with a close frame when the member's session ends (a normal close), when the member may no longer
    /// open the app or path (a role or group taken away at the provider, seen at the next refresh: "policy
    /// violation"), or when the gateway shuts down ("going away", so that pages reconnect elsewhere); a shutdown waits
    /// for the tunnels it closes. The watch ends when the tunnel closes.
    func watch(_ tunnel: WebSocketTunnel, sessionID: String, app: AppConfiguration, rest: String, client: IPAddress?) {
        enum End: UInt16 {
            case session = 1000  // normal closure
            case shutdown = 1001  // going away
            case access = 1008  // policy violation: the member may no longer open this
        }
        let watcher = Task { [draining, sessions, access, interval = sessionCheckInterval] in
            await draining.relaying {
                let end = await withTaskGroup(of: End?.self) { group in
                    group.addTask {
                        while (try? await Task.sleep(for: interval)) != nil {
                            do {
                                guard let session = try await sessions.find(id: sessionID) else { return .session }
                                if !access.stillAllows(app, rest: rest, session: session, client: client) { return .access }
                            } catch {
                                continue  // the store not answering: asked again at the next tick
                            }
                        }
                        return nil
                    }
                    group.addTask {
                        await draining.wait()
                        return Task.isCancelled ? nil : .shutdown
                    }
                    defer { group.cancelAll() }
                    return await group.next() ?? nil
                }
                guard let end else { return }
                tunnel.end(end.rawValue)
                try? await tunnel.closeFuture.get()
            }
        }
        tunnel.closeFuture.whenComplete { _ in watcher.cancel() }
    }

    /// The app, its path and the member's session for an upgrade request: on an app host through its grant cookie,
    /// on the gateway's host through `/apps/<slug>/…` and the session cookie. Cross-site WebSocket hijacking: the
    /// request's `Origin` must be the page's own host (the app host, or the gateway).
    func target(of head: HTTPRequest, client: IPAddress?) async -> (AppConfiguration, String, Session, idle: TimeInterval)? {
        guard let path = head.path else { return nil }
        let origin = head.headerFields[.origin]
        if let app = catalog.hostMountedApp(authority: head.authority), let appsDomain = catalog.appsDomain {
            guard isOrigin(origin, of: appsDomain.origin(of: app.slug)),
                let token = Self.cookie(named: HostMountCookies.grant, in: head.headerFields),
                let sessionID = try? await hostMounts.sessionID(grantTokenHash: TokenHash.hex(token), slug: app.slug),
                case .active(let session, let idle)? = try? await resolver.resolve(sessionID: sessionID, client: client)
            else { return nil }
            return (app, path, session, idle)
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
            case .active(let session, let idle)? = try? await resolver.resolve(
                cookie: Self.cookie(named: configuration.cookie.name, in: head.headerFields), client: client)
        else { return nil }
        return (app, rest, session, idle)
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
}
