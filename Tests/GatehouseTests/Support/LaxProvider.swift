import Foundation
import GatehouseCore
import Hummingbird
import NIOConcurrencyHelpers
import NIOCore

@testable import Gatehouse

/// A provider that never signs anybody in again: whatever `max_age`, `prompt` or `acr_values` an authorization
/// request carries, it answers at once from its "session", whose `auth_time` and `acr` never change. The hostile
/// party a step-up must refuse; it records what it was asked.
struct LaxProvider {
    let provider: TestProvider
    let authTime: Date
    let acr: String?
    let subject: String
    let asked = NIOLockedValueBox<[[String: String]]>([])

    func run<T>(_ body: (_ issuer: String) async throws -> T) async throws -> T {
        let router = Router()
        let jwks = try provider.jwksData()
        let nonces = NIOLockedValueBox<[String: String]>([:])
        router.get(".well-known/openid-configuration") { request, _ -> Response in
            let origin = "http://\(request.head.authority ?? "")"
            return try JSONResponse.make([
                "issuer": origin, "authorization_endpoint": origin + "/authorize", "token_endpoint": origin + "/token",
                "userinfo_endpoint": origin + "/userinfo", "jwks_uri": origin + "/jwks",
            ])
        }
        router.get("jwks") { _, _ in
            Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(data: jwks)))
        }
        router.get("authorize") { [asked] request, _ -> Response in
            var query: [String: String] = [:]
            for (key, value) in request.uri.queryParameters { query[String(key)] = String(value) }
            asked.withLockedValue { $0.append(query) }
            let code = RandomToken.make()
            nonces.withLockedValue { $0[code] = query["nonce"] }
            let location = FormEncoding.url(query["redirect_uri"] ?? "/", adding: [("code", code), ("state", query["state"] ?? "")])
            return Response(status: .found, headers: [.location: location])
        }
        router.post("token") { [provider, authTime, acr, subject] request, _ -> Response in
            let form = FormEncoding.decode(String(buffer: try await request.body.collect(upTo: 1 << 16)))
            let nonce = nonces.withLockedValue { $0.removeValue(forKey: form["code"] ?? "") }
            var claims = provider.claims(iss: "http://\(request.head.authority ?? "")", aud: [form["client_id"] ?? ""], nonce: nonce, sub: subject)
            claims.auth_time = authTime.timeIntervalSince1970
            claims.acr = acr
            let idToken = try await provider.sign(claims)
            return try JSONResponse.make(["access_token": RandomToken.make(), "token_type": "Bearer", "expires_in": 300, "id_token": idToken])
        }
        router.get("userinfo") { [subject] _, _ in try JSONResponse.make(["sub": subject, "name": "Lax Member"]) }
        return try await TestServer.run(router, label: "lax-provider") { port in try await body("http://127.0.0.1:\(port)") }
    }
}
