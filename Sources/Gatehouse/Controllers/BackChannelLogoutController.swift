import Foundation
import GatehouseCore
import GatehouseStorage
import HTTPTypes
import Hummingbird

/// OpenID Connect Back-Channel Logout 1.0: the provider POSTs a signed logout token when a member's SSO session ends
/// there (signed out elsewhere, ended by an administrator, expired). The sessions it names end here, on every replica:
/// the store's delete reaches the other replicas' caches through the invalidation listener.
///
/// A server-to-server call, so no cookies, no CSRF token and no pages: `200` when the logout is done, `400` with an
/// OAuth-style JSON error for anything wrong with the request or the token (nothing changes then), `503` when the
/// provider's keys or the store cannot be reached (the provider may try again).
public struct BackChannelLogoutController: Sendable {
    let providers: IdentityProviders
    let sessions: any SessionStore
    let logoutTokens: any LogoutTokenStore
    let events: EventRecorder

    static let maximumBodyBytes = 64 * 1024

    public func addRoutes(to router: Router<GatewayRequestContext>) {
        router.post(RouterPath(stringLiteral: Paths.backChannelLogout), use: logout)
    }

    @Sendable func logout(_ request: Request, context: GatewayRequestContext) async throws -> Response {
        let claims: LogoutTokenClaims
        let subject: String?
        let providerSessionID: String?
        do {
            let token = try await Self.logoutToken(in: request)
            // The provider that says it sent the token verifies it (its keys, its issuer, its audience); the sessions it
            // names are its own members' only.
            let issuer = MemberClaims.unverifiedClaims(of: token)?["iss"] as? String
            guard let provider = providers.all.first(where: { $0.configuration.issuer == issuer }) else {
                throw OIDCError.invalidLogoutToken("no provider of the gateway's issues \(issuer ?? "tokens without iss")")
            }
            claims = try await provider.verifier.verifyLogoutToken(token)
            subject = try claims.subject.map(provider.account)
            providerSessionID = claims.sessionID.map { provider.accountPrefix + $0 }
        } catch let error as OIDCError {
            if error.isProviderDown { return Self.answer(.serviceUnavailable, error: "temporarily_unavailable", error.description) }
            return refuse(error.description, context: context)
        } catch let error as RequestError {
            return refuse(error.reason, context: context)
        }
        guard try await logoutTokens.remember(issuer: claims.issuer, tokenID: claims.tokenID, until: claims.replayableUntil) else {
            return refuse("logout token \(claims.tokenID) was used before", context: context)
        }
        let ended: [Session]
        do {
            ended = try await sessions.deleteProviderSessions(subject: subject, providerSessionID: providerSessionID)
        } catch {
            // Nothing was ended: the token may be presented again.
            try? await logoutTokens.forget(issuer: claims.issuer, tokenID: claims.tokenID)
            throw error
        }
        for session in ended {
            _ = events.transition(.ssoSessionEnded, from: session.level, sub: session.identity.sub)
            events.record(.ssoLogout, sub: session.identity.sub, detail: "back_channel")
        }
        context.logger.info(
            "back-channel logout",
            metadata: [
                "sub": .string(subject ?? "-"), "sid": .string(claims.sessionID ?? "-"), "sessions_ended": .stringConvertible(ended.count),
            ])
        return Self.answer(.ok)
    }

    /// The one `logout_token` of a form-encoded body.
    static func logoutToken(in request: Request) async throws -> String {
        let contentType = request.headers[.contentType]?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased()
        guard contentType == "application/x-www-form-urlencoded" else {
            throw RequestError.badRequest("the body must be application/x-www-form-urlencoded")
        }
        guard let body = try? await request.body.collect(upTo: maximumBodyBytes) else {
            throw RequestError.badRequest("the body is larger than \(maximumBodyBytes) bytes")
        }
        let pairs = FormEncoding.pairs(String(buffer: body)).filter { $0.0 == "logout_token" }
        guard pairs.count == 1, let token = pairs.first?.1, !token.isEmpty else {
            throw RequestError.badRequest("the body must carry exactly one logout_token")
        }
        return token
    }

    func refuse(_ detail: String, context: GatewayRequestContext) -> Response {
        context.logger.notice("back-channel logout refused", metadata: ["reason": .string(detail)])
        return Self.answer(.badRequest, error: "invalid_request", detail)
    }

    /// Back-Channel Logout §2.8: `Cache-Control: no-store` on every answer; errors as `error` and `error_description`.
    static func answer(_ status: HTTPResponse.Status, error: String? = nil, _ description: String? = nil) -> Response {
        guard let error else { return Response(status: status, headers: [.cacheControl: "no-store"]) }
        var response =
            (try? JSONResponse.make(["error": error, "error_description": description ?? error], status: status)) ?? Response(status: status)
        response.headers[.cacheControl] = "no-store"
        return response
    }
}
