import AsyncHTTPClient
import Crypto
import Foundation
import GatehouseCore
import GatehouseMatrix
import GatehouseStorage
import Hummingbird
import Testing

@testable import Gatehouse

/// Web Push through a real Synapse: Bob's browser (its keys the test's) subscribes, his pusher points at the gateway,
/// and with no page of his open Alice's message reaches a push service on loopback, signed with the gateway's VAPID
/// key and opened with the browser's; the homeserver's side refuses keys it never gave and bodies that are no
/// notification; a subscription the push service says is gone is forgotten, its pusher with it.
@Suite(.serialized) struct ChatPushTests {
    /// What the push service stand-in took: each push's headers (lower-case names) and body; `gone`: answered `410`.
    actor Service {
        var received: [(headers: [String: String], body: Data)] = []
        var gone = false

        func take(_ headers: [String: String], _ body: Data) -> Bool {
            received.append((headers, body))
            return gone
        }

        func setGone() { gone = true }
    }

    static func pushers(_ synapse: TestSynapse, _ userID: String) async throws -> [[String: Any]] {
        try await synapse.admin(.GET, "/_synapse/admin/v1/users/\(userID)/pushers").json["pushers"] as? [[String: Any]] ?? []
    }

    static func eventually(seconds: Int = 30, _ condition: () async throws -> Bool) async throws -> Bool {
        for _ in 0..<(seconds * 5) {
            if try await condition() { return true }
            try await Task.sleep(for: .milliseconds(200))
        }
        return false
    }

    @Test func aMemberWithNoPageOpenIsPushedAndTheGoneSubscriptionForgotten() async throws {
        let synapse = try await TestSynapse.shared.value
        let service = Service()
        let router = Router()
        router.post("push/:name") { request, _ -> Response in
            let body = try await request.body.collect(upTo: 1 << 16)
            var headers: [String: String] = [:]
            for field in request.headers { headers[field.name.canonicalName] = field.value }
            return Response(status: await service.take(headers, Data(buffer: body)) ? .gone : .created)
        }
        try await TestServer.run(router, label: "push-service") { port in
            var push = PushConfiguration()
            push.services = try #require(PushServices(["http://127.0.0.1:\(port)"]))
            try await ChatTests.directChat(synapse, provider: "push", push: push) { pair in
                let (gateway, bob) = (pair.gateway, pair.bob)
                let bobID = "@\(pair.bobName):\(TestSynapse.serverName)"
                let browser = P256.KeyAgreement.PrivateKey(), auth = WebPush.randomBytes(16)
                func post(_ object: [String: Any], path: String = Paths.chatPush, token: Bool = true) async throws -> LiveGateway.Reply {
                    let headers = [("Content-Type", "application/json"), ("Accept", "application/json")] + (token ? [("X-Gatehouse-CSRF", try await bob.csrf())] : [])
                    let body = String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
                    return try await gateway.send(.POST, path, cookies: path == Paths.chatPush ? bob.cookies.values : [:], headers: headers, body: body)
                }
                let subscription: [String: Any] = [
                    "endpoint": "http://127.0.0.1:\(port)/push/bob",
                    "keys": ["p256dh": Base64URL.encode(browser.publicKey.x963Representation), "auth": Base64URL.encode(auth)],
                ]
                // Refused: a service outside the list, no page token, a change with nothing kept.
                var elsewhere = subscription
                elsewhere["endpoint"] = "https://evil.example/push/bob"
                #expect(try await post(["subscription": elsewhere]).status == 400)
                #expect(try await post(["subscription": subscription], token: false).status == 403)
                #expect(try await post(["previews": true]).status == 400)
                #expect(try await Self.pushers(synapse, bobID).isEmpty)

                let on = try await post(["subscription": subscription])
                #expect(on.status == 200 && on.body == #"{"previews":false,"push":true}"#)
                let pusher = try #require(try await Self.pushers(synapse, bobID).first)
                #expect((pusher["data"] as? [String: Any])?["url"] as? String == gateway.origin + Paths.pushGateway)

                // The homeserver's side: a key it never gave is rejected; a body that is no notification is refused.
                let forged = try await post(["notification": ["event_id": "$x", "devices": [["app_id": "org.gatehouse.web", "pushkey": "forged"]]]], path: Paths.pushGateway)
                #expect(forged.status == 200 && forged.body == #"{"rejected":["forged"]}"#)
                #expect(try await post(["nothing": true], path: Paths.pushGateway).status == 400)

                // No page of Bob's is open: Alice's message is pushed, without its text.
                #expect(try await pair.alice.post(Paths.chatSend, [("room", pair.room), ("text", "Lunch at noon?")]).status == 303)
                #expect(try await Self.eventually { await !service.received.isEmpty })
                let (headers, body) = try #require(await service.received.first)
                #expect(headers["content-encoding"] == "aes128gcm" && headers["authorization"]?.hasPrefix("vapid t=") == true)
                let opened = try #require(WebPush.decrypt(body, key: browser, auth: auth))
                let payload = try #require(try JSONSerialization.jsonObject(with: opened) as? [String: String])
                #expect(payload["kind"] == "message" && payload["body"] == "New message" && payload["url"]?.contains("/chats/room?id=") == true)

                // The service says the subscription is gone: forgotten by the gateway, its pusher by the homeserver.
                await service.setGone()
                #expect(try await pair.alice.post(Paths.chatSend, [("room", pair.room), ("text", "Still there?")]).status == 303)
                #expect(try await Self.eventually { try await Self.pushers(synapse, bobID).isEmpty })
                #expect(try await gateway.built.stores.matrixDevices.all(limit: 100).allSatisfy { $0.push == nil })
            }
        }
    }
}

/// The store not answering says nothing about a push key: the homeserver is told to try again (`502`), never to
/// forget the member's pusher.
@Suite struct ChatPushStoreFaultTests {
    struct Unanswering: MatrixDeviceStore {
        struct Down: Error {}
        func insert(_ device: StoredMatrixDevice) async throws -> Bool { throw Down() }
        func device(sessionID: String) async throws -> StoredMatrixDevice? { throw Down() }
        func ending(limit: Int) async throws -> [StoredMatrixDevice] { throw Down() }
        func all(limit: Int) async throws -> [StoredMatrixDevice] { throw Down() }
        func delete(sessionID: String, deviceID: String) async throws { throw Down() }
        func setPush(sessionID: String, deviceID: String, _ push: StoredPush?) async throws -> Bool { throw Down() }
        func device(pushKeyHash: String) async throws -> StoredMatrixDevice? { throw Down() }
    }

    @Test func aPushWhileTheStoreIsDownIsTriedAgainNotForgotten() async throws {
        try await StoreBackend.sqlite.withStores { stores in
            let client = MatrixClient(http: HTTPClient.shared, homeserver: URL(string: "http://127.0.0.1:9")!, timeoutSeconds: 1)
            let chats = ChatSessions(
                client: client, login: LoginToken(secret: String(repeating: "s", count: 32)), serverName: "chat.test", devices: Unanswering(),
                sessions: stores.sessions, mayChat: { _ in true }, logger: StoreBackend.logger)
            let vapid = VAPID(keyMaterial: Data(repeating: 1, count: 32), subject: "mailto:ops@example.org")
            let push = ChatPush(
                chats: chats, sessions: stores.sessions,
                sender: WebPushSender(http: HTTPClient.shared, vapid: vapid, services: try #require(PushServices([])), timeout: .seconds(1)),
                streams: chats.streams, languages: LanguagesTests.languages, publicOrigin: "https://gw.test",
                gatewayURL: "https://gw.test" + Paths.pushGateway, keyMaterial: Data(repeating: 2, count: 32), logger: StoreBackend.logger)
            let notification = try JSONDecoder().decode(
                JSONValue.self, from: Data(#"{"event_id": "$e", "room_id": "!r", "devices": [{"app_id": "org.gatehouse.web", "pushkey": "k"}]}"#.utf8))
            #expect(await push.notify(notification) == ChatPush.Answer(rejected: [], retry: true))
            // A key of another app is no key of the gateway's, whatever the store says.
            let other = try JSONDecoder().decode(JSONValue.self, from: Data(#"{"devices": [{"app_id": "im.other", "pushkey": "k"}]}"#.utf8))
            #expect(await push.notify(other) == ChatPush.Answer(rejected: ["k"], retry: false))
        }
    }
}
