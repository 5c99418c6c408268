import Crypto
import Foundation
import GatehouseCore
import GatehouseMatrix
import GatehouseStorage
import Logging

/// Web Push for a member with no gateway page open: the browser's subscription kept with the Matrix device of its
/// gateway session (`StoredPush`), a pusher of the member's own account at the homeserver pointing at the gateway
/// (`Paths.pushGateway`), and each push the homeserver makes there encrypted for the browser and sent to its push
/// service. The homeserver decides what notifies (its push rules: a direct message, a mention, a call, nothing from a
/// muted chat or of the member's own); the gateway adds that a browser with a page of the member's open is told by
/// that page instead, and that nothing outlives the session (the device's logout takes its pusher with it).
final class ChatPush: Sendable {
    let chats: ChatSessions
    let sessions: any SessionStore
    let sender: WebPushSender
    let streams: LiveStreams
    let languages: Languages
    let publicOrigin: String
    /// Where the homeserver posts (`chat.push.gateway_url`).
    let gatewayURL: String
    /// The key of the push keys: each is the session's and its device's, under it (so none is stored).
    private let keys: SymmetricKey
    let logger: Logger

    var devices: any MatrixDeviceStore { chats.devices }
    var vapid: VAPID { sender.vapid }

    init(
        chats: ChatSessions, sessions: any SessionStore, sender: WebPushSender, streams: LiveStreams, languages: Languages, publicOrigin: String,
        gatewayURL: String, keyMaterial: Data, logger: Logger
    ) {
        self.chats = chats
        self.sessions = sessions
        self.sender = sender
        self.streams = streams
        self.languages = languages
        self.publicOrigin = publicOrigin
        self.gatewayURL = gatewayURL
        self.keys = SymmetricKey(data: keyMaterial)
        self.logger = logger
    }

    /// The key the homeserver's pusher names for the session's device, and the hash the store finds it by.
    func pushKey(sessionID: String, deviceID: String) -> String {
        Base64URL.encode(Data(HMAC<SHA256>.authenticationCode(for: Data("\(sessionID)\n\(deviceID)".utf8), using: keys)))
    }

    static func keyHash(_ pushKey: String) -> String {
        SHA256.hash(data: Data(pushKey.utf8)).withUnsafeBytes { String(lowerHex: $0) }
    }

    // MARK: - The member's browser

    /// The session's subscription, if pushes are on for it.
    func current(_ session: Session) async throws -> StoredPush? {
        try await devices.device(sessionID: session.id)?.push
    }

    /// Turns pushes on for the session's browser (or changes its subscription or its previews): the pusher set at the
    /// homeserver first, then the subscription kept; a device gone meanwhile takes the pusher back.
    func subscribe(_ session: Session, _ subscription: WebPush.Subscription, previews: Bool, language: String) async throws {
        guard sender.services.allowed(subscription.endpoint) != nil else { throw ChatError.invalidMessage("subscription: not a push service the gateway sends to") }
        let credentials = try await chats.credentials(for: session)
        let key = pushKey(sessionID: session.id, deviceID: credentials.deviceID)
        do {
            try await chats.client.setPusher(
                credentials, pushKey: key, url: gatewayURL, deviceName: ChatSessions.deviceName(session.device), language: language)
        } catch {
            throw ChatError.homeserver(error)
        }
        let push = StoredPush(keyHash: Self.keyHash(key), subscription: subscription, previews: previews, language: language)
        guard try await devices.setPush(sessionID: session.id, deviceID: credentials.deviceID, push) else {
            try? await chats.client.removePusher(credentials, pushKey: key)
            throw ChatError.notAllowed
        }
        logger.info("chat: pushes on for a session's browser", metadata: ["device": .string(credentials.deviceID)])
    }

    /// Turns pushes off for the session's browser: the subscription forgotten, the pusher removed (a homeserver that
    /// is down keeps it until the device's logout, and the gateway rejects what it pushes meanwhile).
    func unsubscribe(_ session: Session) async throws {
        guard let device = try await devices.device(sessionID: session.id), device.push != nil else { return }
        _ = try await devices.setPush(sessionID: session.id, deviceID: device.deviceID, nil)
        let credentials = MatrixCredentials(userID: device.userID, deviceID: device.deviceID, accessToken: device.accessToken)
        try? await chats.client.removePusher(credentials, pushKey: pushKey(sessionID: session.id, deviceID: device.deviceID))
    }

    // MARK: - The homeserver's pushes

    /// What the push gateway answers the homeserver for one `notification`.
    struct Answer: Sendable, Equatable {
        /// The push keys the homeserver is to forget (its pusher removed): unknown, or their session ended.
        var rejected: [String] = []
        /// A push service did not take a push now: the homeserver tries the notification again later.
        var retry = false
    }

    func notify(_ notification: JSONValue) async -> Answer {
        var answer = Answer()
        for device in notification["devices"]?.array ?? [] {
            guard let key = device["pushkey"]?.string else { continue }
            switch await push(notification, key: key, appID: device["app_id"]?.string) {
            case .rejected: answer.rejected.append(key)
            case .retry: answer.retry = true
            case .done: break
            }
        }
        return answer
    }

    private enum Step { case done, rejected, retry }

    private func push(_ notification: JSONValue, key: String, appID: String?) async -> Step {
        guard appID == MatrixClient.pusherAppID, key.utf8.count <= 512 else { return .rejected }
        // The store not answering is no answer about the key: the homeserver tries again rather than forget it.
        var found: (device: StoredMatrixDevice?, session: Session?) = (nil, nil)
        do {
            found.device = try await devices.device(pushKeyHash: Self.keyHash(key))
            if let device = found.device { found.session = try await sessions.find(id: device.sessionID) }
        } catch {
            logger.warning("chat: a push not looked up (the store did not answer); the homeserver tries again", metadata: ["error": .string("\(error)")])
            return .retry
        }
        guard let device = found.device, let push = device.push, constantTimeEquals(key, pushKey(sessionID: device.sessionID, deviceID: device.deviceID))
        else { return .rejected }
        // The session ended (or may no longer chat): the reaper logs its device out; nothing is pushed meanwhile.
        guard let session = found.session, chats.mayChat(session), session.chatUserID == device.userID else { return .rejected }
        // A page of the member's is open in a browser of theirs (still, as its stream says): the page tells them.
        if await streams.stillOpen(session: session.id) { return .done }
        let strings = languages.table(push.language)
        guard let shown = PushPayload.make(notification, previews: push.previews, strings: strings, language: push.language, base: publicOrigin),
            let payload = try? JSONEncoder().encode(shown)
        else { return .done }
        let urgent = shown.kind == "call" || notification["prio"]?.string == "high"
        switch await sender.send(payload, to: push.subscription, urgency: urgent ? "high" : "normal", ttl: shown.kind == "call" ? 60 : 86_400) {
        case .delivered:
            return .done
        case .gone(let status):
            logger.info("chat: a browser's subscription is gone; forgotten", metadata: ["status": .stringConvertible(status)])
            _ = try? await devices.setPush(sessionID: device.sessionID, deviceID: device.deviceID, nil)
            return .rejected
        case .failed(let reason):
            logger.warning("chat: a push not taken by the push service; the homeserver tries again", metadata: ["reason": .string(reason)])
            return .retry
        }
    }
}
