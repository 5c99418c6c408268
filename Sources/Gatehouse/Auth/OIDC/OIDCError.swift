import Foundation

/// Everything that can go wrong talking to the identity provider; `reason` is stable for logs, events and the
/// message the member sees.
public enum OIDCError: Error, Equatable, CustomStringConvertible {
    /// The provider sent the member back with `error=…` (e.g. `access_denied` when they cancelled).
    case providerError(code: String, description: String?)
    case providerUnreachable(String)
    /// The provider timed out again and again: Gatehouse stops waiting for it a while (`ProviderBreaker`).
    case providerNotAnswering(String)
    case invalidProviderResponse(String)
    case invalidState
    case tokenExchangeFailed(String)
    case invalidIDToken(String)
    case invalidLogoutToken(String)
    case invalidUserinfo(String)
    case refreshFailed(String)
    /// A step-up's answer does not show the fresh sign-in (or the class of sign-in) the gateway asked for.
    case notReauthenticated(String)

    public var reason: String {
        switch self {
        case .providerError(let code, _): code == "access_denied" ? "access_denied" : "provider_error"
        case .providerUnreachable: "provider_unreachable"
        case .providerNotAnswering: "provider_not_answering"
        case .invalidProviderResponse: "invalid_provider_response"
        case .invalidState: "invalid_state"
        case .tokenExchangeFailed: "token_exchange_failed"
        case .invalidIDToken: "invalid_id_token"
        case .invalidLogoutToken: "invalid_logout_token"
        case .invalidUserinfo: "invalid_userinfo"
        case .refreshFailed: "refresh_failed"
        case .notReauthenticated: "not_reauthenticated"
        }
    }

    public var description: String {
        switch self {
        case .providerError(let code, let text): "\(reason): \(code)\(text.map { " (\($0))" } ?? "")"
        case .invalidState: reason
        case .providerUnreachable(let detail), .providerNotAnswering(let detail), .invalidProviderResponse(let detail),
            .tokenExchangeFailed(let detail),
            .invalidIDToken(let detail), .invalidLogoutToken(let detail), .invalidUserinfo(let detail), .refreshFailed(let detail),
            .notReauthenticated(let detail):
            "\(reason): \(detail)"
        }
    }
}

extension OIDCError {
    /// The provider could not be asked (down, or not answering): not a refusal of anything the member did.
    public var isProviderDown: Bool {
        switch self {
        case .providerUnreachable, .providerNotAnswering: true
        default: false
        }
    }

    /// Runs a fetch from the provider: an `OIDCError` passes through, anything else means the provider was not reached.
    static func fetching<T>(_ what: String, _ fetch: () async throws -> T) async throws(OIDCError) -> T {
        do {
            return try await fetch()
        } catch let error as OIDCError {
            throw error
        } catch {
            throw .providerUnreachable("\(what): \(error)")
        }
    }
}
