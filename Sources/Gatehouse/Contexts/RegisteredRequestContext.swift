import Hummingbird

/// A request from a member who finished the upgrade flow.
public struct RegisteredRequestContext: ChildRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let session: Session

    public init(context: SignedInRequestContext) throws {
        guard context.session.level == .registered else { throw AccessError.registrationRequired(returnTo: nil) }
        self.coreContext = context.coreContext
        self.session = context.session
    }
}
