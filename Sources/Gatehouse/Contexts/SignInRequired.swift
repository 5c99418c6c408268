/// Thrown where a signed-in member is needed; the error middleware turns it into the sign-in page.
public struct SignInRequired: Error, Equatable {
    public var returnTarget: String?
    public var sessionExpired: Bool
}
