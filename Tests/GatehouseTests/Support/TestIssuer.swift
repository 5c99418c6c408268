import Hummingbird
import NIOCore

@testable import Gatehouse

/// An identity provider's public face for gateways under test: discovery and the JWKS of a `TestProvider`, whose
/// keys the test signs with (ID tokens are not needed: the tests that use it make sessions in the store).
enum TestIssuer {
    static func run<T>(_ provider: TestProvider, _ body: (_ issuer: String) async throws -> T) async throws -> T {
        let router = Router()
        let jwks = try provider.jwksData()
        router.get(".well-known/openid-configuration") { request, _ -> Response in
            let origin = "http://\(request.head.authority ?? "")"
            return try JSONResponse.make([
                "issuer": origin, "authorization_endpoint": origin + "/authorize", "token_endpoint": origin + "/token",
                "jwks_uri": origin + "/jwks",
            ])
        }
        router.get("jwks") { _, _ in
            Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(data: jwks)))
        }
        return try await TestServer.run(router, label: "issuer") { port in try await body("http://127.0.0.1:\(port)") }
    }
}
