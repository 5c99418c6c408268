import Foundation
import HTTPTypes

/// What can go wrong between the gateway and an app.
public enum ProxyError: PresentableError, Equatable {
    case unknownApp(String)
    /// An app of the console's that an operator turned off (its slug and name).
    case appTurnedOff(String, name: String)
    case hostNotAllowed(String)
    case redirectOutsideAllowlist(String)
    case upstreamUnreachable(String)
    /// The app's connection broke off before or while it answered.
    case upstreamReset(String)
    case upstreamTimeout(String)
    case requestBodyTooLarge(Int)
    /// The upstream's compressed body inflates past the configured size or ratio (a decompression bomb).
    case inflationLimit(String)
    /// The upstream's compressed body does not inflate (corrupt, or not what its `Content-Encoding` says).
    case upstreamBodyCorrupt(String)
    /// The gateway could not compress the page it rewrote: its own failure, not the app's.
    case pageCompressionFailed(String)
    /// The browser's request body broke off or was malformed before the upstream was contacted.
    case requestBodyInvalid(String)

    public var status: HTTPResponse.Status {
        switch self {
        case .unknownApp, .appTurnedOff: .notFound
        case .hostNotAllowed, .redirectOutsideAllowlist: .forbidden
        case .upstreamUnreachable, .upstreamReset, .inflationLimit, .upstreamBodyCorrupt: .badGateway
        case .pageCompressionFailed: .internalServerError
        case .upstreamTimeout: .gatewayTimeout
        case .requestBodyTooLarge: .contentTooLarge
        case .requestBodyInvalid: .badRequest
        }
    }

    public var reason: String {
        switch self {
        case .unknownApp: "unknown_app"
        case .appTurnedOff(let slug, _): "app_turned_off:\(slug)"
        case .hostNotAllowed: "host_not_allowed"
        case .redirectOutsideAllowlist: "redirect_outside_allowlist"
        case .upstreamUnreachable: "upstream_unreachable"
        case .upstreamReset: "upstream_reset"
        case .upstreamTimeout: "upstream_timeout"
        case .requestBodyTooLarge: "request_body_too_large"
        case .inflationLimit: "inflation_limit"
        case .upstreamBodyCorrupt: "upstream_body_corrupt"
        case .pageCompressionFailed: "page_compression_failed"
        case .requestBodyInvalid: "request_body_invalid"
        }
    }

    /// The allowlist's refusals; the rest are failures.
    public var isRefusal: Bool {
        switch self {
        case .hostNotAllowed, .redirectOutsideAllowlist: true
        default: false
        }
    }

    public var messageKey: String {
        switch self {
        case .unknownApp: "error_not_found"
        case .appTurnedOff: "error_app_turned_off"
        case .hostNotAllowed: "error_app_address_refused"
        case .redirectOutsideAllowlist: "error_outside_allowlist"
        case .upstreamUnreachable, .upstreamReset: "error_upstream_unreachable"
        case .upstreamTimeout: "error_upstream_slow"
        case .requestBodyTooLarge: "error_too_large"
        case .inflationLimit: "error_upstream_invalid"
        case .upstreamBodyCorrupt: "error_upstream_corrupt"
        case .pageCompressionFailed: "error_internal"
        case .requestBodyInvalid: "error_bad_request"
        }
    }

    /// The page names the site an app tried to send the member to (its host only: the way there may carry codes).
    public var messageArguments: [String: String] {
        switch self {
        case .redirectOutsideAllowlist(let location): ["host": URL(string: location)?.host ?? location]
        case .appTurnedOff(_, let name): ["name": "\u{2068}\(name)\u{2069}"]
        default: [:]
        }
    }

    /// The toast an error page shows with this error: an app that failed to answer says so in the words every member
    /// knows (a blocked destination is not the app failing).
    var toastKey: String? {
        guard let kind = upstreamFailureKind, kind != .blocked else { return nil }
        return "toast_app_failed"
    }

    /// The kind of upstream failure this error counts as (`gatehouse_upstream_failures_total`), if it is one.
    var upstreamFailureKind: UpstreamFailureKind? {
        switch self {
        case .hostNotAllowed, .redirectOutsideAllowlist: .blocked
        case .upstreamUnreachable: .connect
        case .upstreamReset: .reset
        case .upstreamTimeout: .timeout
        case .inflationLimit, .upstreamBodyCorrupt: .invalid
        case .unknownApp, .appTurnedOff, .requestBodyTooLarge, .requestBodyInvalid, .pageCompressionFailed: nil
        }
    }
}

extension ProxyError {
    /// What a member is told of an app the catalog does not serve: turned off by an operator, or unknown.
    static func missing(_ slug: String, in catalog: AppCatalog) -> ProxyError {
        catalog.turnedOff[slug].map { .appTurnedOff(slug, name: $0) } ?? .unknownApp(slug)
    }
}
