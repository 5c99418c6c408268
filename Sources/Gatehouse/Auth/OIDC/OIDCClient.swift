import AsyncHTTPClient
import Foundation
import GatehouseCore
import NIOCore
import NIOHTTP1

/// The relying party's side of OpenID Connect against one provider: discovery, code exchange, refresh, userinfo,
/// ID-token verification and the end-session URL.
public struct OIDCClient: Sendable {
    public let configuration: OIDCConfiguration
    let exchange: ProviderExchange
    let discovery: DiscoveryCache
    public let verifier: IDTokenVerifier
    /// Every call to the provider goes through it: a provider that stopped answering is not waited for on every one.
    public let breaker: ProviderBreaker
    /// Before each subject of this provider's, to make the member's account (`IdentityProviders`): empty for the
    /// first provider, `<id>:` for the others.
    public let accountPrefix: String
    /// Account prefixes of the other providers, which a subject of this one must not begin with.
    let reservedPrefixes: [String]

    static let maximumResponseSize = 1 << 20

    public init(
        configuration: OIDCConfiguration, http: HTTPClient, breaker: ProviderBreaker = ProviderBreaker(), accountPrefix: String = "",
        reservedPrefixes: [String] = []
    ) {
        self.init(
            configuration: configuration, exchange: ProviderExchanges.over(http), breaker: breaker, accountPrefix: accountPrefix,
            reservedPrefixes: reservedPrefixes)
    }

    public init(
        configuration: OIDCConfiguration, exchange: @escaping ProviderExchange, breaker: ProviderBreaker = ProviderBreaker(),
        accountPrefix: String = "", reservedPrefixes: [String] = []
    ) {
        self.configuration = configuration
        self.exchange = exchange
        self.breaker = breaker
        self.accountPrefix = accountPrefix
        self.reservedPrefixes = reservedPrefixes
        let timeout = TimeAmount.seconds(Int64(configuration.timeoutSeconds))
        let discovery = DiscoveryCache(issuer: configuration.issuer) {
            try await Self.get(
                exchange, url: ProviderMetadata.trimmed(configuration.issuer) + "/.well-known/openid-configuration", timeout: timeout, breaker: breaker)
        }
        self.discovery = discovery
        let keys = SigningKeySet {
            let metadata = try await discovery.metadata()
            return try await Self.get(exchange, url: metadata.jwksURI, timeout: timeout, breaker: breaker)
        }
        self.verifier = IDTokenVerifier(
            issuer: configuration.issuer, clientID: configuration.clientID, keys: keys,
            clockSkew: TimeInterval(configuration.clockSkewSeconds)
        )
    }

    public func metadata() async throws(OIDCError) -> ProviderMetadata {
        try await discovery.metadata()
    }

    /// The provider's authorization endpoint with the request's parameters; a step-up adds `max_age` with
    /// `prompt=login` (providers that ignore the one honour the other) and `acr_values`.
    public func authorizationURL(
        state: String, nonce: String, pkce: PKCE, redirectURI: String, stepUp: StepUpRequest? = nil
    ) async throws(OIDCError) -> String {
        let metadata = try await metadata()
        var extra: [(String, String)] = []
        if let maxAge = stepUp?.maxAge { extra += [("max_age", String(maxAge)), ("prompt", "login")] }
        if let acr = stepUp?.acr, !acr.isEmpty { extra.append(("acr_values", acr.joined(separator: " "))) }
        return FormEncoding.url(
            metadata.authorizationEndpoint,
            adding: [
                ("response_type", "code"),
                ("client_id", configuration.clientID),
                ("redirect_uri", redirectURI),
                ("scope", configuration.scopes.joined(separator: " ")),
                ("state", state),
                ("nonce", nonce),
                ("code_challenge", pkce.challenge),
                ("code_challenge_method", PKCE.method),
            ] + extra)
    }

    public func exchange(code: String, codeVerifier: String, redirectURI: String) async throws(OIDCError) -> TokenResponse {
        do {
            return try await tokenRequest([
                ("grant_type", "authorization_code"), ("code", code), ("redirect_uri", redirectURI), ("code_verifier", codeVerifier),
            ])
        } catch  where error.isProviderDown {
            throw error
        } catch {
            throw .tokenExchangeFailed(error.description)
        }
    }

    public func refresh(refreshToken: String) async throws(OIDCError) -> TokenResponse {
        do {
            return try await tokenRequest([("grant_type", "refresh_token"), ("refresh_token", refreshToken)])
        } catch  where error.isProviderDown {
            throw error  // not a refusal: the session goes on with its tokens (`SessionResolver`)
        } catch {
            throw .refreshFailed(error.description)
        }
    }

    public func userinfo(accessToken: String) async throws(OIDCError) -> MemberIdentity {
        let metadata = try await metadata()
        guard let endpoint = metadata.userinfoEndpoint else { throw .invalidProviderResponse("no userinfo_endpoint") }
        var request = ProviderRequest(url: endpoint)
        request.headers.add(name: "Authorization", value: "Bearer \(accessToken)")
        request.headers.add(name: "Accept", value: "application/json")
        let (status, body) = try await send(request)
        guard status == .ok else { throw .invalidUserinfo("userinfo answered \(status.code)") }
        return try MemberClaims.identity(fromUserinfo: body, clientID: configuration.clientID)
    }

    /// Who the member is, as the provider says with these tokens: userinfo read with the access token, merged with the
    /// ID token's claims and the access token's when it is a JWT (`MemberClaims.identity(userinfo:idToken:accessToken:clientID:)`).
    public func memberIdentity(accessToken: String, idToken: String?) async throws(OIDCError) -> MemberIdentity {
        let userinfo = try await userinfo(accessToken: accessToken)
        var identity = MemberClaims.identity(
            userinfo: userinfo, idToken: idToken.flatMap(MemberClaims.unverifiedClaims(of:)),
            accessToken: MemberClaims.unverifiedClaims(of: accessToken), clientID: configuration.clientID)
        identity.sub = try account(identity.sub)
        return identity
    }

    /// The member's account for `subject`, a subject of this provider's.
    public func account(_ subject: String) throws(OIDCError) -> String {
        if reservedPrefixes.contains(where: subject.hasPrefix) {
            throw .invalidUserinfo("the subject would read as another provider's account")
        }
        return accountPrefix + subject
    }

    /// The provider's subject of `account`, one of this provider's accounts.
    public func subject(of account: String) -> String {
        String(account.dropFirst(accountPrefix.count))
    }

    /// The member after a refresh of `session`'s tokens: a new ID token verified (same subject, the sign-in's nonce if
    /// any), the identity read again, for the same subject. Any failure ends the session as a refused refresh does.
    public func refreshedIdentity(of session: Session, response: TokenResponse) async throws(OIDCError) -> MemberIdentity {
        if let idToken = response.idToken {
            let signInNonce = MemberClaims.unverifiedClaims(of: session.tokens.idToken)?["nonce"] as? String
            _ = try await verifier.verifyRefreshed(idToken, subject: subject(of: session.identity.sub), signInNonce: signInNonce)
        }
        let identity = try await memberIdentity(accessToken: response.accessToken, idToken: response.idToken)
        guard identity.sub == session.identity.sub else { throw .invalidUserinfo("userinfo names another subject after a refresh") }
        return identity
    }

    /// Where the browser goes to end the provider's session, or `nil` when the provider has no such endpoint.
    public func endSessionURL(idTokenHint: String?, postLogoutRedirectURI: String) async -> String? {
        guard let endpoint = try? await metadata().endSessionEndpoint else { return nil }
        var pairs = [("client_id", configuration.clientID), ("post_logout_redirect_uri", postLogoutRedirectURI)]
        if let idTokenHint { pairs.append(("id_token_hint", idTokenHint)) }
        return FormEncoding.url(endpoint, adding: pairs)
    }

    private func tokenRequest(_ pairs: [(String, String)]) async throws(OIDCError) -> TokenResponse {
        let metadata = try await metadata()
        var request = ProviderRequest(url: metadata.tokenEndpoint)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        request.headers.add(name: "Accept", value: "application/json")
        var form = pairs
        if let secret = configuration.clientSecret {
            let credentials = "\(FormEncoding.escape(configuration.clientID)):\(FormEncoding.escape(secret))"
            request.headers.add(name: "Authorization", value: "Basic \(Data(credentials.utf8).base64EncodedString())")
        } else {
            form.append(("client_id", configuration.clientID))
        }
        request.body = ByteBuffer(string: FormEncoding.encode(form))
        let (status, body) = try await send(request)
        guard status == .ok else {
            let error = (try? JSONSerialization.jsonObject(with: body) as? [String: Any])?["error"] as? String
            throw .invalidProviderResponse("token endpoint answered \(status.code) \(error ?? "")")
        }
        do {
            return try JSONDecoder().decode(TokenResponse.self, from: body)
        } catch {
            throw .invalidProviderResponse("token response: \(error)")
        }
    }

    private func send(_ request: ProviderRequest) async throws(OIDCError) -> (HTTPResponseStatus, Data) {
        try await OIDCError.fetching(request.url) {
            try await breaker.guarding(request.url) { try await exchange(request, .seconds(Int64(configuration.timeoutSeconds))) }
        }
    }

    static func get(_ exchange: ProviderExchange, url: String, timeout: TimeAmount, breaker: ProviderBreaker) async throws -> Data {
        var request = ProviderRequest(url: url)
        request.headers.add(name: "Accept", value: "application/json")
        let (status, body) = try await OIDCError.fetching(url) { try await breaker.guarding(url) { try await exchange(request, timeout) } }
        guard status == .ok else { throw OIDCError.invalidProviderResponse("\(url) answered \(status.code)") }
        return body
    }
}
