import Foundation

/// The product events (product §7).
public enum EventName: String, Sendable, CaseIterable, Codable {
    case ssoLoginAttempt = "sso_login_attempt"
    case ssoLoginSuccess = "sso_login_success"
    case ssoLoginFailure = "sso_login_failure"
    case ssoLogout = "sso_logout"
    case upgradeBannerShown = "upgrade_banner_shown"
    case upgradeBannerTapped = "upgrade_banner_tapped"
    case upgradeBannerDismissed = "upgrade_banner_dismissed"
    case registrationStarted = "registration_started"
    case registrationCompleted = "registration_completed"
    case registrationFailed = "registration_failed"
    case registrationResumed = "registration_resumed"
    /// The member left the flow by its Cancel (`detail`: the step they were at).
    case registrationCancelled = "registration_cancelled"
    /// An operator reset a member's upgrade (the audit line: `detail` says whether the chat account was ended, and by
    /// which operator).
    case registrationReset = "registration_reset"
    case stateInconsistencyDetected = "state_inconsistency_detected"
    /// The member proved themselves again for a path or an app that asked (`detail`: `sign_in`, `pin`, or why it
    /// was refused).
    case stepUp = "step_up"
    /// A session was used from a second network within minutes of the first (`detail`: `flagged`, or `ended` with
    /// `session.bind_to_network`).
    case sessionNetworkChanged = "session_network_changed"
}

public struct GatewayEvent: Sendable, Equatable {
    public var name: EventName
    public var sub: String?
    /// A short, stable reason or detail; never a secret.
    public var detail: String?
    public var at: Date

    public init(name: EventName, sub: String? = nil, detail: String? = nil, at: Date = Date()) {
        self.name = name
        self.sub = sub
        self.detail = detail
        self.at = at
    }
}
