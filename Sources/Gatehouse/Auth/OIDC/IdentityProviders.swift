import AsyncHTTPClient
import GatehouseCore

/// The identity providers members sign in at (`oidc`, or each of its list), each with its client. The account is the
/// pair (provider, subject): the first provider's subjects are the accounts as they are, so that an organization that
/// adds a realm keeps every member's account; another's are `<id>:<sub>` (`OIDCClient.accountPrefix`), and a subject
/// of the first that would read as one of those is refused.
public struct IdentityProviders: Sendable {
    public let all: [OIDCClient]

    /// `http(keyPath)`: the client for a provider's TLS settings (`oidc.tls`, `oidc[1].tls`). The provider at
    /// `builtIn`'s issuer (development mode's) is asked through its own exchange (in-process,
    /// `DevelopmentIdentityProvider.exchange`).
    public init(
        _ configurations: [OIDCConfiguration], builtIn: (issuer: String, exchange: ProviderExchange)? = nil, http: (String) -> HTTPClient
    ) {
        let prefixes = configurations.dropFirst().map { $0.id + ":" }
        all = configurations.enumerated().map { index, configuration in
            OIDCClient(
                configuration: configuration,
                exchange: builtIn.flatMap { ProviderMetadata.trimmed(configuration.issuer) == $0.issuer ? $0.exchange : nil }
                    ?? ProviderExchanges.over(http(index == 0 ? "oidc.tls" : "oidc[\(index)].tls")),
                breaker: ProviderBreaker(pause: .seconds(configuration.pauseAfterTimeoutsSeconds)),
                accountPrefix: index == 0 ? "" : configuration.id + ":", reservedPrefixes: index == 0 ? prefixes : [])
        }
    }

    public var primary: OIDCClient { all[0] }

    /// The provider named `id`; `nil` (the first) when none is named.
    public func client(_ id: String?) -> OIDCClient? {
        guard let id else { return primary }
        return all.first { $0.configuration.id == id }
    }

    /// The provider `session` was signed in at.
    public func client(for session: Session) -> OIDCClient {
        client(session.provider) ?? primary
    }

    /// How a provider is recorded on what it starts: `nil` for the first.
    public func recorded(_ client: OIDCClient) -> String? {
        client.accountPrefix.isEmpty ? nil : client.configuration.id
    }
}
