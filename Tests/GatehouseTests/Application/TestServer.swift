import Foundation
import Hummingbird
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle

@testable import Gatehouse

/// A real HTTP server for a test's counterpart (a webhook receiver, an identity provider): `router` on a loopback
/// port while `body` runs, then stopped.
enum TestServer {
    static func run<T>(_ router: Router<BasicRequestContext>, label: String, _ body: (_ port: Int) async throws -> T) async throws -> T {
        let port = try await LiveGateway.freePort()
        var logger = Logger(label: label)
        logger.logLevel = .error
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)), logger: logger)
        let group = ServiceGroup(services: [app], gracefulShutdownSignals: [], logger: logger)
        return try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            defer { tasks.cancelAll() }
            try await waitUntilListening(port: port)
            let result = try await body(port)
            await group.triggerGracefulShutdown()
            return result
        }
    }

    static func waitUntilListening(port: Int) async throws {
        for _ in 0..<100 {
            if (try? await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).connect(host: "127.0.0.1", port: port).get().close()) != nil
            {
                return
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }
}

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
