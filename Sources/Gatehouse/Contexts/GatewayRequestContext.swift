import Foundation
import GatehouseCore
import Hummingbird

/// Every request starts here: whatever session the cookie names, if it is still alive.
public struct GatewayRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    public var session: Session?
    /// How long the member had been away before this request (`SessionResolver.Resolution.active`).
    public var sessionIdle: TimeInterval = 0
    /// The cookie named a session that has just ended (expired, idle, refresh refused).
    public var sessionEnded = false
    /// The member whose session ran out of time on this request (`SessionResolver.Resolution.expired`).
    public var timedOutMember: String?
    /// The path and query a signed-out member asked for, kept for after sign-in (GET and HEAD only).
    public var returnTarget: String?
    /// Who sent the request: the connection's peer, or the client a trusted load balancer names (`ClientAddressMiddleware`).
    /// It goes to apps in `X-Forwarded-For` and is what per-address rate limits count.
    public var clientAddress: String?
    /// The connection's peer, whatever a load balancer says of the client: who is asking (forward-auth trusts the
    /// original URL only from a trusted proxy).
    public let peerAddress: String?
    /// The request's trace: the one a trusted proxy's `traceparent` names, or a new one (`TraceMiddleware`).
    public var trace: TraceContext?

    public init(source: Source) {
        self.coreContext = .init(source: source)
        self.peerAddress = source.channel.remoteAddress?.ipAddress
        self.clientAddress = peerAddress
    }
}
