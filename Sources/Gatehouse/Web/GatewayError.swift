import HTTPTypes

/// An error the member can be told about: a status, a stable reason for logs, and the strings-table keys of the page.
public protocol PresentableError: Error {
    var status: HTTPResponse.Status { get }
    var reason: String { get }
    /// Prefix of `<key>_title` and `<key>_text` in the strings table.
    var messageKey: String { get }
}

/// Requests the gateway refuses on its own account.
public enum RequestError: PresentableError, Equatable {
    case badRequest(String)
    case forbidden(String)
    case notFound

    public var status: HTTPResponse.Status {
        switch self {
        case .badRequest: .badRequest
        case .forbidden: .forbidden
        case .notFound: .notFound
        }
    }

    public var reason: String {
        switch self {
        case .badRequest(let detail): "bad_request:\(detail)"
        case .forbidden(let detail): "forbidden:\(detail)"
        case .notFound: "not_found"
        }
    }

    public var messageKey: String {
        switch self {
        case .badRequest: "error_bad_request"
        case .forbidden: "error_forbidden"
        case .notFound: "error_not_found"
        }
    }
}

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
