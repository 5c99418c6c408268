/// What can go wrong between the gateway and the homeserver, as the member's session meets it.
public enum MatrixError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The homeserver answered with an error (`errcode`, its status).
    case refused(status: Int, errcode: String, message: String)
    /// The access token is no longer valid (the device was logged out elsewhere, or the account deactivated).
    case tokenInvalid
    /// No answer: refused connection, timeout, a broken response.
    case unreachable(String)
    /// An answer that is not what the API says it should be.
    case invalidResponse(String)

    public var description: String {
        switch self {
        case .refused(let status, let errcode, let message): "homeserver refused (\(status) \(errcode)): \(message)"
        case .tokenInvalid: "the access token is no longer valid"
        case .unreachable(let reason): "homeserver unreachable: \(reason)"
        case .invalidResponse(let reason): "unexpected answer from the homeserver: \(reason)"
        }
    }

    /// A short stable reason for logs and metrics.
    public var reason: String {
        switch self {
        case .refused(_, let errcode, _): errcode
        case .tokenInvalid: "token_invalid"
        case .unreachable: "unreachable"
        case .invalidResponse: "invalid_response"
        }
    }

    /// Whether asking again later may succeed.
    public var isTransient: Bool {
        switch self {
        case .unreachable: true
        case .refused(let status, let errcode, _): status >= 500 || status == 429 || errcode == "M_LIMIT_EXCEEDED"
        case .tokenInvalid, .invalidResponse: false
        }
    }
}
