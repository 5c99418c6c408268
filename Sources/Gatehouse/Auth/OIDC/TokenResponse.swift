/// The token endpoint's answer (RFC 6749 §5.1 plus `id_token`).
public struct TokenResponse: Sendable, Decodable, Equatable {
    public var accessToken: String
    public var idToken: String?
    public var refreshToken: String?
    public var expiresIn: Int?
    public var tokenType: String?

    enum CodingKeys: String, CodingKey {
        case accessToken = "access_token"
        case idToken = "id_token"
        case refreshToken = "refresh_token"
        case expiresIn = "expires_in"
        case tokenType = "token_type"
    }
}
