/// The parts of `/.well-known/openid-configuration` the relying party uses.
public struct ProviderMetadata: Sendable, Codable, Equatable {
    public var issuer: String
    public var authorizationEndpoint: String
    public var tokenEndpoint: String
    public var userinfoEndpoint: String?
    public var jwksURI: String
    public var endSessionEndpoint: String?
    public var codeChallengeMethodsSupported: [String]?

    enum CodingKeys: String, CodingKey {
        case issuer
        case authorizationEndpoint = "authorization_endpoint"
        case tokenEndpoint = "token_endpoint"
        case userinfoEndpoint = "userinfo_endpoint"
        case jwksURI = "jwks_uri"
        case endSessionEndpoint = "end_session_endpoint"
        case codeChallengeMethodsSupported = "code_challenge_methods_supported"
    }

    public init(
        issuer: String, authorizationEndpoint: String, tokenEndpoint: String, userinfoEndpoint: String?, jwksURI: String,
        endSessionEndpoint: String?, codeChallengeMethodsSupported: [String]? = ["S256"]
    ) {
        self.issuer = issuer
        self.authorizationEndpoint = authorizationEndpoint
        self.tokenEndpoint = tokenEndpoint
        self.userinfoEndpoint = userinfoEndpoint
        self.jwksURI = jwksURI
        self.endSessionEndpoint = endSessionEndpoint
        self.codeChallengeMethodsSupported = codeChallengeMethodsSupported
    }

    /// OpenID Connect Discovery §4.3: the document must name exactly the issuer it was fetched for.
    public func validate(expectedIssuer: String) throws(OIDCError) {
        guard Self.trimmed(issuer) == Self.trimmed(expectedIssuer) else {
            throw .invalidProviderResponse("discovery issuer \(issuer) does not match the configured \(expectedIssuer)")
        }
        if let methods = codeChallengeMethodsSupported, !methods.contains("S256") {
            throw .invalidProviderResponse("the provider does not support PKCE S256")
        }
    }

    static func trimmed(_ issuer: String) -> String {
        issuer.hasSuffix("/") ? String(issuer.dropLast()) : issuer
    }
}
