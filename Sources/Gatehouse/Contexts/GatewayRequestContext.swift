import Hummingbird

/// Every request starts here: whatever session the cookie names, if it is still alive.
public struct GatewayRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    public var session: Session?
    /// The cookie named a session that has just ended (expired, idle, refresh refused).
    public var sessionEnded = false
    /// The path and query a signed-out member asked for, kept for after sign-in (GET and HEAD only).
    public var returnTarget: String?
    /// The address the connection came from, as the gateway saw it (for `X-Forwarded-For`).
    public let remoteAddress: String?

    public init(source: Source) {
        self.coreContext = .init(source: source)
        self.remoteAddress = source.channel.remoteAddress?.ipAddress
    }
}
