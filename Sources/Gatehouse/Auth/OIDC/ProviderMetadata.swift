import GatehouseCore

/// The parts of `/.well-known/openid-configuration` the relying party uses.
public struct ProviderMetadata: Sendable, Codable, Equatable {
    public var issuer: String
    public var authorizationEndpoint: String
    public var tokenEndpoint: String
    public var userinfoEndpoint: String?
    public var jwksURI: String
    public var endSessionEndpoint: String?
    public var codeChallengeMethodsSupported: [String]?
    /// RFC 9207: the provider names itself in every authorization response (`iss`), which the callback then checks.
    public var authorizationResponseIssParameterSupported: Bool?

    enum CodingKeys: String, CodingKey {
        case issuer
        case authorizationEndpoint = "authorization_endpoint"
        case tokenEndpoint = "token_endpoint"
        case userinfoEndpoint = "userinfo_endpoint"
        case jwksURI = "jwks_uri"
        case endSessionEndpoint = "end_session_endpoint"
        case codeChallengeMethodsSupported = "code_challenge_methods_supported"
        case authorizationResponseIssParameterSupported = "authorization_response_iss_parameter_supported"
    }

    public init(
        issuer: String, authorizationEndpoint: String, tokenEndpoint: String, userinfoEndpoint: String?, jwksURI: String,
        endSessionEndpoint: String?, codeChallengeMethodsSupported: [String]? = ["S256"],
        authorizationResponseIssParameterSupported: Bool? = nil
    ) {
        self.issuer = issuer
        self.authorizationEndpoint = authorizationEndpoint
        self.tokenEndpoint = tokenEndpoint
        self.userinfoEndpoint = userinfoEndpoint
        self.jwksURI = jwksURI
        self.endSessionEndpoint = endSessionEndpoint
        self.codeChallengeMethodsSupported = codeChallengeMethodsSupported
        self.authorizationResponseIssParameterSupported = authorizationResponseIssParameterSupported
    }

    /// OpenID Connect Discovery §4.3: the document must name exactly the issuer it was fetched for, character for
    /// character (a trailing slash is a different issuer).
    public func validate(expectedIssuer: String) throws(OIDCError) {
        guard issuer == expectedIssuer else {
            throw .invalidProviderResponse("discovery issuer \(issuer) does not match the configured \(expectedIssuer)")
        }
        if let methods = codeChallengeMethodsSupported, !methods.contains("S256") {
            throw .invalidProviderResponse("the provider does not support PKCE S256")
        }
    }

    /// The issuer without a trailing slash, for building the discovery URL (Discovery §4.1); never for comparing.
    static func trimmed(_ issuer: String) -> String {
        issuer.hasSuffix("/") ? String(issuer.dropLast()) : issuer
    }
}
