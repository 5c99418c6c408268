import HTTPTypes

/// A signed-in member asked for something their level, roles or groups do not open.
public enum AccessError: PresentableError, Equatable {
    /// `returnTo`: the gateway path the member asked for, reached after the upgrade.
    case registrationRequired(returnTo: String?)
    case appNotAllowed(String)

    public var status: HTTPResponse.Status { .forbidden }

    public var reason: String {
        switch self {
        case .registrationRequired: "registration_required"
        case .appNotAllowed(let slug): "app_not_allowed:\(slug)"
        }
    }

    public var messageKey: String {
        switch self {
        case .registrationRequired: "feature_locked"
        case .appNotAllowed: "error_app_not_allowed"
        }
    }
}
