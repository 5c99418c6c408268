import Foundation
import GatehouseCore
import Hummingbird

/// A request from a signed-in member; creating it fails (and sends the browser to sign in) without a session.
public struct SignedInRequestContext: ChildRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let session: Session
    public let clientAddress: String?
    public let trace: TraceContext?
    /// How long the member had been away before this request.
    public let idle: TimeInterval

    public init(context: GatewayRequestContext) throws {
        guard let session = context.session else {
            throw SignInRequired(returnTarget: context.returnTarget, sessionExpired: context.sessionEnded)
        }
        self.coreContext = context.coreContext
        self.session = session
        self.clientAddress = context.clientAddress
        self.trace = context.trace
        self.idle = context.sessionIdle
    }

    /// The request's moment for an access decision: now, from the client's address, after the member's pause.
    public var accessMoment: AccessMoment {
        AccessMoment(client: clientAddress.flatMap(IPAddress.init), idle: idle)
    }
}
