import HTTPTypes

/// What can go wrong between the gateway and an app.
public enum ProxyError: PresentableError, Equatable {
    case unknownApp(String)
    case hostNotAllowed(String)
    case redirectOutsideAllowlist(String)
    case upstreamUnreachable(String)
    case upstreamTimeout(String)
    case requestBodyTooLarge(Int)

    public var status: HTTPResponse.Status {
        switch self {
        case .unknownApp: .notFound
        case .hostNotAllowed, .redirectOutsideAllowlist: .forbidden
        case .upstreamUnreachable: .badGateway
        case .upstreamTimeout: .gatewayTimeout
        case .requestBodyTooLarge: .contentTooLarge
        }
    }

    public var reason: String {
        switch self {
        case .unknownApp: "unknown_app"
        case .hostNotAllowed: "host_not_allowed"
        case .redirectOutsideAllowlist: "redirect_outside_allowlist"
        case .upstreamUnreachable: "upstream_unreachable"
        case .upstreamTimeout: "upstream_timeout"
        case .requestBodyTooLarge: "request_body_too_large"
        }
    }

    public var messageKey: String {
        switch self {
        case .unknownApp: "error_not_found"
        case .hostNotAllowed, .redirectOutsideAllowlist: "error_outside_allowlist"
        case .upstreamUnreachable, .upstreamTimeout: "error_upstream_unreachable"
        case .requestBodyTooLarge: "error_too_large"
        }
    }
}
