import Foundation
import GatehouseCore
import HTTPTypes
import Hummingbird
import JWTKit

/// A real OpenID Connect provider for development mode only: discovery, an account picker, the token endpoint with
/// PKCE, userinfo, JWKS and end-session. Built into the binary so that `swift run gatehouse` needs nothing else.
public struct DevelopmentIdentityProvider: Sendable {
    let issuer: String
    let clientID: String
    let redirectURI: String
    let postLogoutRedirectURI: String
    let renderer: PageRenderer
    /// Generated at every start, printed in the console and shown on the sign-in page: never a fixed credential.
    public let demoPassword: String
    let keys: JWTKeyCollection
    let publicJWK: [String: String]
    let grants = DevelopmentGrants()

    static let keyID = "gatehouse-dev-es256"
    static let accessTokenLifetime: TimeInterval = 600
    static let refreshTokenLifetime: TimeInterval = 8 * 3600

    /// Refuses to exist outside development mode.
    public init(configuration: GatehouseConfiguration, renderer: PageRenderer) async throws {
        guard configuration.developmentMode else { throw DevelopmentProviderError.notInDevelopmentMode }
        self.issuer = configuration.publicOrigin + Paths.developmentIdentityProvider
        self.clientID = configuration.oidc.clientID
        self.redirectURI = configuration.redirectURI
        self.postLogoutRedirectURI = configuration.postLogoutRedirectURI
        self.renderer = renderer
        self.demoPassword = String(RandomToken.make(bytes: 6).prefix(8))
        let key = ES256PrivateKey()
        self.keys = JWTKeyCollection()
        await keys.add(ecdsa: key, kid: JWKIdentifier(string: Self.keyID))
        let parameters = key.publicKey.parameters!
        self.publicJWK = ["kty": "EC", "crv": "P-256", "use": "sig", "alg": "ES256", "kid": Self.keyID, "x": parameters.x, "y": parameters.y]
    }

    public func addRoutes(to router: Router<GatewayRequestContext>) {
        let group = router.group(RouterPath(stringLiteral: Paths.developmentIdentityProvider))
        group.get(".well-known/openid-configuration") { _, _ in try JSONResponse.make(self.discoveryDocument) }
        group.get("jwks") { _, _ in try JSONResponse.make(["keys": [self.publicJWK]]) }
        group.get("authorize") { request, _ in try self.authorizePage(request) }
        group.post("authorize") { request, _ in try await self.authorize(request) }
        group.post("token") { request, _ in try await self.token(request) }
        group.get("userinfo") { request, _ in try await self.userinfo(request) }
        group.get("logout") { request, _ in try await self.logout(request) }
    }

    var discoveryDocument: [String: Any] {
        [
            "issuer": issuer,
            "authorization_endpoint": issuer + "/authorize",
            "token_endpoint": issuer + "/token",
            "userinfo_endpoint": issuer + "/userinfo",
            "jwks_uri": issuer + "/jwks",
            "end_session_endpoint": issuer + "/logout",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["ES256"],
            "code_challenge_methods_supported": ["S256"],
            "scopes_supported": OIDCConfiguration.defaultScopes,
            "token_endpoint_auth_methods_supported": ["none"],
        ]
    }

    /// The parameters of an authorization request, checked before anything is shown: a bad client or redirect URI
    /// is never redirected to (RFC 6749 §4.1.2.1).
    struct AuthorizationRequest {
        var parameters: [String: String]
        var state: String { parameters["state"] ?? "" }

        func problem(clientID: String, redirectURI: String) -> String? {
            if parameters["client_id"] != clientID { return "unknown client_id" }
            if parameters["redirect_uri"] != redirectURI { return "redirect_uri is not registered" }
            if parameters["response_type"] != "code" { return "response_type must be code" }
            if parameters["code_challenge_method"] != "S256" || (parameters["code_challenge"] ?? "").isEmpty { return "PKCE S256 is required" }
            if state.isEmpty { return "state is required" }
            if !(parameters["scope"] ?? "").split(separator: " ").contains("openid") { return "scope must include openid" }
            return nil
        }
    }

    static let authorizationKeys = [
        "client_id", "redirect_uri", "response_type", "scope", "state", "nonce", "code_challenge", "code_challenge_method", "max_age", "prompt",
        "acr_values",
    ]

    /// The levels of authentication this provider offers, weakest first, as Keycloak's `acr.loa.map` names them
    /// (`{"silver": 1, "gold": 2}`): the member picks one on the page, the app's `acr_values` preselects it.
    static let levels = ["silver", "gold"]

    func authorizePage(_ request: Request) throws -> Response {
        var parameters: [String: String] = [:]
        for key in Self.authorizationKeys { parameters[key] = request.uri.queryParameters.get(key) }
        return try picker(AuthorizationRequest(parameters: parameters), selected: nil, error: nil)
    }

    func picker(_ authorization: AuthorizationRequest, selected: String?, error: String?, status: HTTPResponse.Status = .ok) throws -> Response {
        if let problem = authorization.problem(clientID: clientID, redirectURI: redirectURI) {
            return try renderer.page(
                "dev-idp-error", title: renderer.strings["dev_signin_title"], status: .badRequest,
                [
                    "message": renderer.strings.text("dev_error_request", ["detail": problem])
                ])
        }
        let accounts: [[String: Any]] = DevelopmentAccounts.all.enumerated().map { index, account in
            [
                "username": account.username, "name": account.name, "email": account.email,
                "phone": account.phoneNumber ?? "—", "roles": account.realmRoles.joined(separator: ", "),
                "checked": account.username == (selected ?? DevelopmentAccounts.all[0].username), "index": index,
            ]
        }
        // This provider keeps no sign-in of its own: every authorization asks for the password, so `max_age` and
        // `prompt=login` are always met; the page says that the app asked.
        let asked = (authorization.parameters["acr_values"] ?? "").split(separator: " ").map(String.init).filter(Self.levels.contains)
        let chosen = asked.first ?? Self.levels[0]
        var values: [String: Any] = [
            "accounts": accounts,
            "levels": Self.levels.map { ["value": $0, "label": renderer.strings["dev_level_\($0)"], "checked": $0 == chosen] },
            "reauthenticate": authorization.parameters["prompt"] == "login" || authorization.parameters["max_age"] != nil,
            "hidden": Self.authorizationKeys.map { ["name": $0, "value": authorization.parameters[$0] ?? ""] },
            "passwordHint": renderer.strings.text("dev_password_hint", ["password": demoPassword]),
        ]
        if !asked.isEmpty { values["levelsAsked"] = renderer.strings.text("dev_level_asked", ["levels": asked.joined(separator: ", ")]) }
        if let error { values["error"] = error }
        return try renderer.page("dev-idp-authorize", title: renderer.strings["dev_signin_title"], status: status, values)
    }

    func authorize(_ request: Request) async throws -> Response {
        let form = FormEncoding.decode(String(buffer: try await request.body.collect(upTo: 64 * 1024)))
        var parameters: [String: String] = [:]
        for key in Self.authorizationKeys { parameters[key] = form[key] }
        let authorization = AuthorizationRequest(parameters: parameters)
        if authorization.problem(clientID: clientID, redirectURI: redirectURI) != nil {
            return try picker(authorization, selected: nil, error: nil)
        }
        if form["action"] == "cancel" {
            return redirect(
                FormEncoding.url(
                    redirectURI,
                    adding: [("error", "access_denied"), ("error_description", "The member cancelled sign-in"), ("state", authorization.state)]))
        }
        guard let account = form["account"].flatMap(DevelopmentAccounts.account(username:)) else {
            return try picker(authorization, selected: nil, error: renderer.strings["dev_error_account"], status: .badRequest)
        }
        guard let password = form["password"], constantTimeEquals(password, demoPassword) else {
            return try picker(authorization, selected: account.username, error: renderer.strings["dev_error_password"], status: .unauthorized)
        }
        let code = await grants.issueCode(
            .init(
                username: account.username, redirectURI: redirectURI, codeChallenge: parameters["code_challenge"] ?? "",
                nonce: parameters["nonce"], scopes: Set((parameters["scope"] ?? "").split(separator: " ").map(String.init)),
                providerSession: RandomToken.make(), expiresAt: Date().addingTimeInterval(60),
                authentication: .init(at: Date(), acr: form["acr"].flatMap { Self.levels.contains($0) ? $0 : nil } ?? Self.levels[0])
            ))
        return redirect(FormEncoding.url(redirectURI, adding: [("code", code), ("state", authorization.state)]))
    }

    func token(_ request: Request) async throws -> Response {
        let form = FormEncoding.decode(String(buffer: try await request.body.collect(upTo: 64 * 1024)))
        guard form["client_id"] == clientID else { return try Self.oauthError("invalid_client", status: .unauthorized) }
        switch form["grant_type"] {
        case "authorization_code":
            guard let code = form["code"], let grant = await grants.redeemCode(code) else { return try Self.oauthError("invalid_grant") }
            guard form["redirect_uri"] == grant.redirectURI else { return try Self.oauthError("invalid_grant") }
            guard let verifier = form["code_verifier"], PKCE.isValidVerifier(verifier), PKCE.challenge(for: verifier) == grant.codeChallenge else {
                return try Self.oauthError("invalid_grant")
            }
            return try await tokens(
                username: grant.username, scopes: grant.scopes, providerSession: grant.providerSession, authentication: grant.authentication,
                nonce: grant.nonce)
        case "refresh_token":
            guard let token = form["refresh_token"], let grant = await grants.redeemRefreshToken(token) else {
                return try Self.oauthError("invalid_grant")
            }
            return try await tokens(
                username: grant.username, scopes: grant.scopes, providerSession: grant.providerSession, authentication: grant.authentication,
                nonce: nil)
        default:
            return try Self.oauthError("unsupported_grant_type")
        }
    }

    /// Tokens for one sign-in at this provider; `providerSession` (the ID token's `sid`) and the `authentication` (its
    /// `auth_time` and `acr`) stay the same across refreshes: a refresh is no new authentication.
    func tokens(
        username: String, scopes: Set<String>, providerSession: String, authentication: DevelopmentGrants.Authentication, nonce: String?
    ) async throws -> Response {
        guard let account = DevelopmentAccounts.account(username: username) else { return try Self.oauthError("invalid_grant") }
        let issued = await grants.issueTokens(
            username: username, scopes: scopes, providerSession: providerSession, authentication: authentication,
            accessLifetime: Self.accessTokenLifetime, refreshLifetime: Self.refreshTokenLifetime
        )
        let now = Date().timeIntervalSince1970
        let idToken = try await keys.sign(
            DevelopmentIDToken(
                iss: issuer, sub: account.sub, aud: clientID, azp: clientID, exp: now + 300, iat: now,
                auth_time: authentication.at.timeIntervalSince1970, acr: authentication.acr, nonce: nonce, sid: providerSession,
                name: account.name, email: account.email, preferred_username: account.username
            ),
            kid: JWKIdentifier(string: Self.keyID)
        )
        return try JSONResponse.make([
            "access_token": issued.access, "token_type": "Bearer", "expires_in": Int(Self.accessTokenLifetime),
            "refresh_token": issued.refresh, "id_token": idToken, "scope": scopes.sorted().joined(separator: " "),
        ])
    }

    func userinfo(_ request: Request) async throws -> Response {
        guard let authorization = request.headers[.authorization], authorization.hasPrefix("Bearer "),
            let grant = await grants.accessGrant(String(authorization.dropFirst(7))),
            let account = DevelopmentAccounts.account(username: grant.username)
        else {
            var response = try Self.oauthError("invalid_token", status: .unauthorized)
            response.headers[.wwwAuthenticate] = "Bearer error=\"invalid_token\""
            return response
        }
        return try JSONResponse.make(account.claims(scopes: grant.scopes, clientID: clientID))
    }

    /// RP-initiated logout: only back to the registered post-logout URI.
    func logout(_ request: Request) async throws -> Response {
        let target = request.uri.queryParameters.get("post_logout_redirect_uri").map { String($0) }
        if let hint = request.uri.queryParameters.get("id_token_hint"),
            let token = try? await keys.verify(hint, as: DevelopmentIDToken.self)
        {
            await grants.revokeAll(username: token.preferred_username)
        }
        guard let target, target == postLogoutRedirectURI else {
            return try renderer.page(
                "dev-idp-error", title: renderer.strings["dev_signin_title"], status: .badRequest,
                [
                    "message": renderer.strings.text("dev_error_request", ["detail": "post_logout_redirect_uri is not registered"])
                ])
        }
        return redirect(target)
    }

    func redirect(_ location: String) -> Response {
        Response(status: .found, headers: [.location: location, .cacheControl: "no-store"])
    }

    static func oauthError(_ code: String, status: HTTPResponse.Status = .badRequest) throws -> Response {
        try JSONResponse.make(["error": code], status: status)
    }
}

struct DevelopmentIDToken: JWTPayload {
    var iss: String
    var sub: String
    var aud: String
    var azp: String
    var exp: Double
    var iat: Double
    var auth_time: Double
    var acr: String
    var nonce: String?
    var sid: String
    var name: String
    var email: String
    var preferred_username: String

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

public enum DevelopmentProviderError: Error, CustomStringConvertible {
    case notInDevelopmentMode
    /// An in-process request for another provider's address.
    case notThisProvider(String)

    public var description: String {
        switch self {
        case .notInDevelopmentMode: "the development identity provider only runs in development mode"
        case .notThisProvider(let url): "\(url) is not the development identity provider's"
        }
    }
}
