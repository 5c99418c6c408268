import NIOCore
import NIOHTTP1

/// What the gateway decides about a request head, synchronously on the connection's event loop: answer it here
/// (`proxy`), or hand it to the application as it is. The gateway target implements it; nothing it is given or
/// answers needs a task, a lock held across a suspension, or another thread.
public protocol DataPlaneRoutes: Sendable {
    /// `peer` is the connection's remote address. Anything that needs to wait (no cached session, a refresh due, a
    /// name not yet resolved, a body the data plane does not take: chunked, over the limit, or of no stated length)
    /// answers `.application`; WebSocket upgrades are
    /// `DataPlaneUpgrades`' and never come here.
    func route(_ head: RequestHead, peer: SocketAddress?) -> DataPlaneRoute
}

/// What the gateway decides about a WebSocket upgrade (`Upgrade: websocket` on HTTP/1.1), on whichever request of a
/// connection it comes: its checks and the app's own handshake wait, so the decision is a future, on `eventLoop` (the
/// member connection's, where the app's connection is to be made too).
public protocol DataPlaneUpgrades: Sendable {
    func upgrade(_ head: HTTPRequestHead, peer: SocketAddress?, eventLoop: any EventLoop) -> EventLoopFuture<DataPlaneUpgrade>
}

public enum DataPlaneUpgrade: Sendable {
    /// The app answered `101`: `head` goes to the member, and from then on the bytes of each side go to the other
    /// through `upstream` (on the member's event loop, its pipeline ending in a `TunnelSide(.app)`) until either
    /// closes or the gateway ends the tunnel it is given in `opened`.
    case tunnel(HTTPResponseHead, upstream: any Channel, opened: @Sendable (WebSocketTunnel) -> Void)
    /// No upgrade: the request goes on to the application, which answers it as a plain request (its page), and the
    /// connection closes after that answer (the HTTP reader reads nothing after an upgrade request).
    case application
}

public enum DataPlaneRoute {
    case application
    case proxy(any DataPlaneExchange)
}

/// One proxied request, from the gateway's side: the request to send, and the mapping of the app's answer into the
/// member's. Called on the connection's event loop only, in this order: `start`, then (for `.afterFirstChunk`)
/// `startAfterFirstChunk`, then `body` per chunk and `end`; or `answer` for a failure before the member's head went
/// out; `finished` always, last.
public protocol DataPlaneExchange: AnyObject {
    /// Where to connect: the address the allowlist checked.
    var endpoint: UpstreamEndpoint { get }
    /// The head to send upstream (hygienic headers, the jar's cookies, the gateway's identity headers), as bytes.
    var upstreamHead: UpstreamRequestHead { get }
    /// May be sent a second time when a reused connection closed before any answer (RFC 9110 §9.2.2).
    var isIdempotent: Bool { get }
    /// The length of the request's body as `upstreamHead` tells the app (0: none); the member's body must be as long.
    var requestBodyLength: Int { get }

    /// The app's head: the member's head to send now, or to decide once the body's first bytes are known.
    func start(_ upstream: HTTPResponseHead) throws -> ResponseStart
    /// Asked right after `start`: `nil` when the member's answer goes on at once, else what it waits for first (the
    /// jar change the app's answer made must be in the store other replicas read before the member can follow the
    /// answer to one of them). What the app sends meanwhile is kept.
    func answerMayStart(on eventLoop: any EventLoop) -> EventLoopFuture<Void>?
    /// For `.afterFirstChunk`: the member's head, and the body's first bytes as they go out (`nil`: an empty body).
    func startAfterFirstChunk(_ chunk: ByteBuffer?) throws -> (HTTPResponseHead, ByteBuffer?)
    /// A chunk of the app's body as the member gets it.
    func body(_ chunk: ByteBuffer) throws -> ByteBuffer
    /// What is still held back when the app's body ends.
    func end() -> ByteBuffer?
    /// The complete answer for a failure before the member's head went out (an error page).
    func answer(_ failure: DataPlaneFailure) -> (HTTPResponseHead, ByteBuffer)
    /// The exchange is over: the status the member got (if a head went out), and what went wrong (if anything).
    func finished(status: HTTPResponseStatus?, failure: DataPlaneFailure?)
}

public enum ResponseStart {
    case now(HTTPResponseHead)
    case afterFirstChunk
}

/// The member's body was longer or shorter than its head said: the exchange is refused and the connection closed.
public struct RequestBodyMismatch: Error, CustomStringConvertible {
    public init() {}
    public var description: String { "the request's body does not match its length" }
}

/// Why an exchange did not end with the app's complete answer.
public enum DataPlaneFailure: Error {
    /// No connection to the app (refused, unreachable, connect timeout, the pool shut down).
    case connect(any Error)
    /// The app took longer than the read timeout to send its head or its next bytes.
    case timeout
    /// The app's connection broke off before its answer was complete.
    case reset
    /// The gateway refused the answer or failed to transform it (a redirect outside the allowlist, a bomb).
    case refused(any Error)
    /// The member's connection closed first: no failure of the app's.
    case memberLeft
}
