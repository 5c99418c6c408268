import Hummingbird

/// Every request starts here: whatever session the cookie names, if it is still alive.
public struct GatewayRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    public var session: Session?
    /// The cookie named a session that has just ended (expired, idle, refresh refused).
    public var sessionEnded = false
    /// The path and query a signed-out member asked for, kept for after sign-in (GET and HEAD only).
    public var returnTarget: String?

    public init(source: Source) {
        self.coreContext = .init(source: source)
    }
}

/// A request from a signed-in member; creating it fails (and sends the browser to sign in) without a session.
public struct SignedInRequestContext: ChildRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let session: Session

    public init(context: GatewayRequestContext) throws {
        guard let session = context.session else {
            throw SignInRequired(returnTarget: context.returnTarget, sessionExpired: context.sessionEnded)
        }
        self.coreContext = context.coreContext
        self.session = session
    }
}

/// A request from a member who finished the upgrade flow.
public struct RegisteredRequestContext: ChildRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let session: Session

    public init(context: SignedInRequestContext) throws {
        guard context.session.level == .registered else { throw AccessError.registrationRequired }
        self.coreContext = context.coreContext
        self.session = context.session
    }
}

/// Thrown where a signed-in member is needed; the error middleware turns it into the sign-in page.
public struct SignInRequired: Error, Equatable {
    public var returnTarget: String?
    public var sessionExpired: Bool
}
