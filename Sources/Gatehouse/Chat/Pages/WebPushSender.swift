import AsyncHTTPClient
import Foundation
import GatehouseCore
import NIOCore
import NIOHTTP1

/// One push to a browser's push service (RFC 8030 §5): the message encrypted for the subscription, the gateway's
/// VAPID token, how long the service may keep it (`TTL`) and how urgent it is. Only to a service the allowlist names,
/// checked again at every push (the list may have changed since the browser subscribed).
struct WebPushSender: Sendable {
    enum Outcome: Sendable, Equatable {
        case delivered
        /// The subscription is no more (`404`/`410`), was made for another key (`401`/`403`), or its service is no
        /// longer allowed: forgotten.
        case gone(Int)
        /// The service did not take it now (down, `429`, `5xx`): the homeserver is told to try again later.
        case failed(String)
    }

    let http: HTTPClient
    let vapid: VAPID
    let services: PushServices
    let timeout: TimeAmount

    func send(_ payload: Data, to subscription: WebPush.Subscription, urgency: String, ttl: Int) async -> Outcome {
        guard let endpoint = services.allowed(subscription.endpoint) else { return .gone(403) }
        do {
            var request = HTTPClientRequest(url: endpoint.absoluteString)
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/octet-stream")
            request.headers.add(name: "Content-Encoding", value: "aes128gcm")
            request.headers.add(name: "TTL", value: String(ttl))
            request.headers.add(name: "Urgency", value: urgency)
            request.headers.add(name: "Authorization", value: try vapid.authorization(for: endpoint, now: Date()))
            request.body = .bytes(ByteBuffer(data: try WebPush.encrypt(payload, for: subscription)))
            let response = try await http.execute(request, timeout: timeout)
            _ = try? await response.body.collect(upTo: 64 << 10)
            switch response.status.code {
            case 200..<300: return .delivered
            case 401, 403, 404, 410: return .gone(Int(response.status.code))
            default: return .failed("push service answered \(response.status.code)")
            }
        } catch {
            return .failed(String(describing: error))
        }
    }
}
