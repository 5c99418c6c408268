import Foundation

/// A sign-in in progress: what the callback must match, bound to the browser that started it.
public struct LoginAttempt: Sendable, Codable, Equatable {
    /// The `state` sent to the identity provider.
    public var state: String
    /// SHA-256 of the random value kept in the browser's login cookie.
    public var browserBindingHash: String
    public var nonce: String
    public var codeVerifier: String
    public var returnTo: String
    public var createdAt: Date
    /// A step-up: the `max_age` and the `acr_values` the provider was asked for, which its answer must show.
    public var stepUp: StepUpRequest?
    /// The identity provider asked (`oidc[].id`); `nil`: the first.
    public var provider: String?

    public init(
        state: String, browserBindingHash: String, nonce: String, codeVerifier: String, returnTo: String, createdAt: Date,
        stepUp: StepUpRequest? = nil
    ) {
        self.stepUp = stepUp
        self.state = state
        self.browserBindingHash = browserBindingHash
        self.nonce = nonce
        self.codeVerifier = codeVerifier
        self.returnTo = returnTo
        self.createdAt = createdAt
    }

    public static let lifetime: TimeInterval = 600
}
