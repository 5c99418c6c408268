import HTTPTypes

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
