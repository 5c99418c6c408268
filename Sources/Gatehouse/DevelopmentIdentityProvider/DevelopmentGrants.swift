import Foundation
import GatehouseCore

/// What the development provider has issued: authorization codes, access tokens and refresh tokens, all single-use
/// where OAuth says so. In memory: a restart of development mode signs everybody out at their next refresh.
actor DevelopmentGrants {
    /// The member's authentication a grant comes from: when, and at which level.
    struct Authentication {
        var at: Date
        var acr: String
    }

    struct CodeGrant {
        var username: String
        var redirectURI: String
        var codeChallenge: String
        var nonce: String?
        var scopes: Set<String>
        /// The sign-in at this provider the grant belongs to (`sid`).
        var providerSession: String
        var expiresAt: Date
        var authentication: Authentication
    }

    struct TokenGrant {
        var username: String
        var scopes: Set<String>
        var providerSession: String
        var authentication: Authentication
        var expiresAt: Date
    }

    private var codes: [String: CodeGrant] = [:]
    private var accessTokens: [String: TokenGrant] = [:]
    private var refreshTokens: [String: TokenGrant] = [:]

    func issueCode(_ grant: CodeGrant) -> String {
        let code = RandomToken.make()
        codes[code] = grant
        return code
    }

    /// A code works once, before it expires.
    func redeemCode(_ code: String) -> CodeGrant? {
        guard let grant = codes.removeValue(forKey: code), grant.expiresAt > Date() else { return nil }
        return grant
    }

    func issueTokens(
        username: String, scopes: Set<String>, providerSession: String, authentication: Authentication, accessLifetime: TimeInterval,
        refreshLifetime: TimeInterval
    ) -> (access: String, refresh: String) {
        let access = RandomToken.make()
        let refresh = RandomToken.make()
        let now = Date()
        accessTokens[access] = TokenGrant(
            username: username, scopes: scopes, providerSession: providerSession, authentication: authentication,
            expiresAt: now.addingTimeInterval(accessLifetime))
        refreshTokens[refresh] = TokenGrant(
            username: username, scopes: scopes, providerSession: providerSession, authentication: authentication,
            expiresAt: now.addingTimeInterval(refreshLifetime))
        return (access, refresh)
    }

    /// Refresh tokens rotate: the one presented is spent.
    func redeemRefreshToken(_ token: String) -> TokenGrant? {
        guard let grant = refreshTokens.removeValue(forKey: token), grant.expiresAt > Date() else { return nil }
        return grant
    }

    func accessGrant(_ token: String) -> TokenGrant? {
        guard let grant = accessTokens[token], grant.expiresAt > Date() else { return nil }
        return grant
    }

    func revokeAll(username: String) {
        accessTokens = accessTokens.filter { $0.value.username != username }
        refreshTokens = refreshTokens.filter { $0.value.username != username }
    }
}
