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
