import Foundation
import GatehouseCore
import GatehouseMatrix
import Hummingbird

/// The two ends of Web Push (`ChatPush`): the Chats page's script turning pushes on or off for its browser
/// (`Paths.chatPush`), and the homeserver's pusher posting each notification (`Paths.pushGateway`, the Matrix push
/// gateway API).
struct PushController: Sendable {
    let push: ChatPush
    let languages: Languages

    /// The member's side, behind the Chats feature's gate.
    func addRoutes(to actions: RouterGroup<SignedInRequestContext>) {
        actions.post(RouterPath(stringLiteral: Paths.chatPush)) { request, context in try await change(request, context) }
    }

    /// The homeserver's side: no session, before the gateway's pages (a server's request, its push key its proof).
    func addGatewayRoute(to router: Router<GatewayRequestContext>) {
        router.post(RouterPath(stringLiteral: Paths.pushGateway)) { request, _ in try await notify(request) }
    }

    /// `{"subscription": {"endpoint": …, "keys": {"p256dh": …, "auth": …}}, "previews": false}` turns pushes on (or
    /// changes the subscription), `{"previews": true}` alone changes the previews of the one kept, `{"off": true}` turns
    /// them off. Answers what holds now: `{"push": true, "previews": false}`.
    func change(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        let session = context.session
        try GatewayPageIsolation.checkPageToken(request, session: session)
        let body = try await request.body.collect(upTo: 8 * 1024)
        guard let asked = try? JSONDecoder().decode(JSONValue.self, from: Data(body.readableBytesView)), asked.object != nil else {
            throw ChatError.invalidMessage("push: a JSON object")
        }
        if asked["off"]?.bool == true {
            try await push.unsubscribe(session)
            return try JSONResponse.make(["push": false, "previews": false])
        }
        let kept = try await push.current(session)
        let previews = asked["previews"]?.bool ?? kept?.previews ?? false
        let language = languages.language(session: session, acceptLanguage: request.headers[.acceptLanguage])
        if let given = asked["subscription"] {
            guard let endpoint = given["endpoint"]?.string, let p256dh = given["keys"]?["p256dh"]?.string, let auth = given["keys"]?["auth"]?.string,
                let subscription = WebPush.Subscription(endpoint: endpoint, p256dh: p256dh, auth: auth)
            else { throw ChatError.invalidMessage("subscription: an endpoint and the keys p256dh (65 bytes) and auth (16 bytes)") }
            try await push.subscribe(session, subscription, previews: previews, language: language)
        } else if let kept {
            try await push.subscribe(session, kept.subscription, previews: previews, language: language)
        } else {
            throw ChatError.invalidMessage("subscription: none kept to change")
        }
        return try JSONResponse.make(["push": true, "previews": previews])
    }

    /// The homeserver's notification: pushed to the browsers of the pushers it names. Answers the push keys to
    /// forget (`rejected`), or `502` when a push service did not take a push now, so that the homeserver tries again.
    func notify(_ request: Request) async throws -> Response {
        let body = try await request.body.collect(upTo: 64 * 1024)
        guard let asked = try? JSONDecoder().decode(JSONValue.self, from: Data(body.readableBytesView)), let notification = asked["notification"],
            notification.object != nil
        else {
            return try JSONResponse.make(["errcode": "M_BAD_JSON", "error": "a notification object is required"], status: .badRequest)
        }
        let answer = await push.notify(notification)
        if answer.retry { return try JSONResponse.make(["errcode": "M_UNKNOWN", "error": "a push service did not take the push"], status: .badGateway) }
        return try JSONResponse.make(["rejected": answer.rejected])
    }
}
