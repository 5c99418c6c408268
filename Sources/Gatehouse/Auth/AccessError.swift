import HTTPTypes

/// A signed-in member asked for something their level, roles or groups do not open.
public enum AccessError: PresentableError, Equatable {
    case registrationRequired
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
