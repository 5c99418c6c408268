import AsyncHTTPClient
import Foundation
import GatehouseMatrix
import Hummingbird
import NIOConcurrencyHelpers
import Testing

@testable import Gatehouse

/// A homeserver that stops answering and comes back: the pages' stream is told each once (`reachable`), a page that
/// starts listening meanwhile is told at once, and the stream writes it as the `homeserver` event the pages show.
@Suite struct HomeserverFaultTests {
    @Test func thePagesAreToldWhenTheHomeserverFailsAndWhenItAnswersAgain() async throws {
        // Two failures, then answers: the loop retries by itself.
        let failures = NIOLockedValueBox(2)
        let router = Router()
        router.get("_matrix/client/v3/sync") { _, _ -> Response in
            let failing = failures.withLockedValue { left in
                defer { left -= 1 }
                return left > 0
            }
            if failing { return Response(status: .badGateway) }
            try await Task.sleep(for: .milliseconds(200))
            return Response(status: .ok, body: .init(byteBuffer: ByteBuffer(string: #"{"next_batch": "s1"}"#)))
        }
        try await TestServer.run(router, label: "homeserver") { port in
            let client = MatrixClient(http: HTTPClient.shared, homeserver: URL(string: "http://127.0.0.1:\(port)")!, timeoutSeconds: 5)
            let loop = SyncLoop(client: client, credentials: MatrixCredentials(userID: "@a:chat.test", deviceID: "D", accessToken: "t"), wait: .zero)
            let (id, updates) = await loop.listen()
            var told: [Bool] = []
            for await update in updates {
                if case .reachable(let up) = update { told.append(up) }
                if told.count == 1 {
                    // A page that listens while the homeserver is away hears so at once.
                    #expect(await loop.unreachable)
                    let (late, lateUpdates) = await loop.listen()
                    var first: ChatUpdate?
                    for await update in lateUpdates {
                        first = update
                        break
                    }
                    if case .reachable(false) = first {} else { Issue.record("a late listener was told \(String(describing: first))") }
                    await loop.stopListening(late)
                }
                if told.count == 2 { break }
            }
            #expect(told == [false, true])
            #expect(await !loop.unreachable)
            await loop.stopListening(id)
            await loop.end()
        }
    }
}
