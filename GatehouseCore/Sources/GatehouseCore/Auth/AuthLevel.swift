/// How far a member has come (product §1).
public enum AuthLevel: String, Sendable, Codable, CaseIterable, Comparable {
    case none
    case sso
    case registered

    private var rank: Int {
        switch self {
        case .none: 0
        case .sso: 1
        case .registered: 2
        }
    }

    public static func < (lhs: AuthLevel, rhs: AuthLevel) -> Bool { lhs.rank < rhs.rank }
}

/// Why a level changes; the reason decides which transitions are allowed.
public enum LevelChange: String, Sendable {
    case signIn
    case upgradeCompleted
    /// An operator reset the member's upgrade: back to `sso`, the flow open again.
    case upgradeReset
    case signOut
    case ssoSessionEnded
}

/// The only place that knows which level transitions exist.
public struct LevelTransition: Sendable, Equatable {
    public let from: AuthLevel
    public let to: AuthLevel

    /// The level a member reaches by `change`, or `nil` when the transition is refused.
    ///
    /// Sign-in lands on `registered` straight away for a member whose registration is on record.
    public static func apply(_ change: LevelChange, from level: AuthLevel, isRegistered: Bool = false) -> AuthLevel? {
        switch (change, level) {
        case (.signIn, .none): isRegistered ? .registered : .sso
        case (.upgradeCompleted, .sso): .registered
        case (.upgradeReset, .registered): .sso
        case (.signOut, .sso), (.signOut, .registered): AuthLevel.none
        case (.ssoSessionEnded, .sso), (.ssoSessionEnded, .registered): AuthLevel.none
        default: nil
        }
    }
}
