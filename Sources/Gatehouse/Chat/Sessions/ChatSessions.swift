import Foundation
import GatehouseCore
import GatehouseMatrix
import GatehouseStorage
import Logging
import NIOConcurrencyHelpers

/// The member's Matrix session, held by the gateway as it holds app cookies: one device of the member's own account
/// per gateway session (whichever replica made it), obtained with the homeserver's JWT login (`LoginToken`: a key
/// only the gateway and the homeserver hold, no admin power), its token sealed in the store and never sent to a
/// browser, and logged out when the gateway session ends for any reason (`MatrixDeviceReaper`). The pages reach the
/// homeserver only through here.
public final class ChatSessions: Sendable {
    let client: MatrixClient
    let login: LoginToken
    let serverName: String
    let devices: any MatrixDeviceStore
    let sessions: any SessionStore
    /// Whether a session may chat at all: registered, with a chat account, and the chat feature theirs.
    let mayChat: @Sendable (Session) -> Bool
    let logger: Logger
    /// Each session's sync loop on this replica.
    private let loops = NIOLockedValueBox<[String: SyncLoop]>([:])
    /// The pages' live streams open on this replica (`LiveFeed`), by session.
    let streams = LiveStreams()
    /// Logins under way on this replica, so that two pages at once make one device.
    private let logins = NIOLockedValueBox<[String: Task<MatrixCredentials, any Error>]>([:])

    public init(
        client: MatrixClient, login: LoginToken, serverName: String, devices: any MatrixDeviceStore, sessions: any SessionStore,
        mayChat: @escaping @Sendable (Session) -> Bool, logger: Logger
    ) {
        self.client = client
        self.login = login
        self.serverName = serverName
        self.devices = devices
        self.sessions = sessions
        self.mayChat = mayChat
        self.logger = logger
    }

    /// The session's device: the one held, else a new one. Refused for a session that may not chat (a member at
    /// `sso` never gets a Matrix session from the gateway).
    public func credentials(for session: Session) async throws -> MatrixCredentials {
        guard mayChat(session), let userID = session.chatUserID, let localpart = localpart(of: userID) else { throw ChatError.notAllowed }
        if let held = try await devices.device(sessionID: session.id), held.userID == userID {
            return MatrixCredentials(userID: held.userID, deviceID: held.deviceID, accessToken: held.accessToken)
        }
        let task = logins.withLockedValue { logins in
            if let running = logins[session.id] { return running }
            let started = Task { try await self.newDevice(for: session, userID: userID, localpart: localpart) }
            logins[session.id] = started
            return started
        }
        defer { _ = logins.withLockedValue { $0.removeValue(forKey: session.id) } }
        return try await task.value
    }

    private func newDevice(for session: Session, userID: String, localpart: String) async throws -> MatrixCredentials {
        let made: MatrixCredentials
        do {
            made = try await client.login(token: login.token(localpart: localpart), deviceName: Self.deviceName(session.device))
        } catch {
            logger.warning("chat: login at the homeserver failed", metadata: ["reason": .string(error.reason)])
            throw ChatError.homeserver(error)
        }
        guard made.userID == userID else {
            // The homeserver's idea of the account differs from the registration's: this device is not the member's.
            try? await client.logout(made)
            throw ChatError.homeserver(.invalidResponse("login as \(made.userID), not \(userID)"))
        }
        let stored = StoredMatrixDevice(
            sessionID: session.id, sub: session.identity.sub, userID: made.userID, deviceID: made.deviceID, accessToken: made.accessToken,
            createdAt: Date())
        if try await devices.insert(stored) {
            logger.info("chat: device made for a session", metadata: ["device": .string(made.deviceID)])
            return made
        }
        // Another replica made the session's device first: that one is kept, this one goes.
        try? await client.logout(made)
        guard let held = try await devices.device(sessionID: session.id) else { throw ChatError.notAllowed }
        return MatrixCredentials(userID: held.userID, deviceID: held.deviceID, accessToken: held.accessToken)
    }

    /// The session's sync loop on this replica (made at first use; made again on a new device when the homeserver
    /// no longer knows the old one).
    public func loop(for session: Session) async throws -> SyncLoop {
        if let loop = loops.withLockedValue({ $0[session.id] }), mayChat(session) {
            guard await loop.isEnded else { return loop }
            await deviceGone(loop)
        }
        let credentials = try await credentials(for: session)
        return loops.withLockedValue { loops in
            if let loop = loops[session.id], loop.credentials == credentials { return loop }
            let loop = SyncLoop(client: client, credentials: credentials)
            loops[session.id] = loop
            return loop
        }
    }

    /// The member's unread messages over their rooms, for the Chats tab's and the bar's count (`nil`: no chat for
    /// them). Asking keeps the session's sync loop up a minute, so that the next ask is answered from memory.
    public func unread(for session: Session) async throws -> Int? {
        guard mayChat(session) else { return nil }
        let loop = try await loop(for: session)
        await loop.lease(seconds: 60)
        return try await current(loop).unreadTotal
    }

    /// The member's handle at the homeserver on the loop's device, for what the pages ask (send, join, …): a token
    /// the homeserver refuses is a device gone, replaced at the member's next request. (A failure reaches the member
    /// as the chat's error: `MatrixError`'s presentation.)
    public func matrix(_ loop: SyncLoop) -> MatrixSession {
        MatrixSession(client: client, credentials: loop.credentials) { [weak self] in await self?.deviceGone(loop) }
    }

    /// The loop's room list, brought up to date; a refused token as in `matrix(_:)`.
    public func current(_ loop: SyncLoop) async throws(MatrixError) -> RoomList {
        do {
            return try await loop.current()
        } catch .tokenInvalid {
            await deviceGone(loop)
            throw .tokenInvalid
        }
    }

    /// The homeserver refused the device's token (it was logged out from another client's device list, or its token
    /// expired): the loop and the row go, and the session's next chat request logs in anew as the member, for as long
    /// as the gateway session lasts. A newer device of the session, made meanwhile by another replica, stays.
    func deviceGone(_ loop: SyncLoop) async {
        let sessionID = loops.withLockedValue { loops -> String? in
            guard let key = loops.first(where: { $0.value === loop })?.key else { return nil }
            loops.removeValue(forKey: key)
            return key
        }
        await loop.end()
        guard let sessionID else { return }
        let deviceID = loop.credentials.deviceID
        do {
            try await devices.delete(sessionID: sessionID, deviceID: deviceID)
            logger.info("chat: device gone at the homeserver; a new one at next use", metadata: ["device": .string(deviceID)])
        } catch {
            logger.warning("chat: a gone device not forgotten", metadata: ["device": .string(deviceID), "error": .string("\(error)")])
        }
    }

    /// Obtains the session's device ahead of its first chat page (at sign-in, at the end of the upgrade), without
    /// holding up what the member is doing; a failure is logged and tried again at first use.
    public func prepare(_ session: Session) {
        guard mayChat(session) else { return }
        Task { _ = try? await self.credentials(for: session) }
    }

    /// Logs the session's device out and forgets it; its loop's pages are told. Done at sign-out at once, and by the
    /// reaper for every other way a session ends.
    public func end(sessionID: String) async {
        await endLoop(sessionID: sessionID)
        guard let device = try? await devices.device(sessionID: sessionID) else { return }
        await logOut(device)
    }

    func end(_ device: StoredMatrixDevice) async {
        await endLoop(sessionID: device.sessionID)
        await logOut(device)
    }

    private func endLoop(sessionID: String) async {
        guard let loop = loops.withLockedValue({ $0.removeValue(forKey: sessionID) }) else { return }
        await hangUp(loop)
        await loop.end()
    }

    /// The calls the loop's device placed or answered end with the session: the other member's page is told at once
    /// rather than by a connection that goes quiet. (A call ringing for the member rings on their other sessions.)
    func hangUp(_ loop: SyncLoop) async {
        // The room list as of now (the loop may not have run since the device's last signal), once.
        let refreshed = try? await loop.refresh()
        let rooms = if let refreshed { refreshed } else { await loop.rooms }
        let now = Int(Date().timeIntervalSince1970 * 1000)
        for call in rooms.calls.calls.values {
            let phase = call.phase(at: now)
            guard phase == .connected || phase == .ringing, call.involves(party: loop.credentials.deviceID) else { continue }
            let content = CallSignal.content(call: call.id, party: loop.credentials.deviceID, ["reason": .string("user_hangup")])
            // Tried three times while the homeserver's failure is a passing one; one transaction id, so that a retry
            // of a hang-up that did arrive arrives once.
            let transaction = "hangup-" + call.id
            for attempt in 1...3 {
                do {
                    _ = try await client.send(loop.credentials, room: call.room, type: "m.call.hangup", content: content, transactionID: transaction)
                    break
                } catch {
                    guard attempt < 3, error.isTransient else {
                        logger.warning("chat: a call not hung up as its session ended", metadata: ["error": .string("\(error)")])
                        break
                    }
                    try? await Task.sleep(for: .milliseconds(250 * attempt))
                }
            }
        }
    }

    private func logOut(_ device: StoredMatrixDevice) async {
        do {
            try await client.logout(MatrixCredentials(userID: device.userID, deviceID: device.deviceID, accessToken: device.accessToken))
            try await devices.delete(sessionID: device.sessionID, deviceID: device.deviceID)
            logger.info("chat: device logged out", metadata: ["device": .string(device.deviceID)])
        } catch {
            // The homeserver is down: the row stays, and the reaper tries again.
            logger.warning("chat: device logout failed; tried again later", metadata: ["device": .string(device.deviceID), "error": .string("\(error)")])
        }
    }

    /// One pass of the reaper: every device whose session is gone or no longer registered, and (`full`) every device
    /// whose session may no longer chat (a role lost).
    public func reap(full: Bool) async throws -> Int {
        var ended = 0
        for device in try await devices.ending(limit: 200) {
            await end(device)
            ended += 1
        }
        guard full else { return ended }
        for device in try await devices.all(limit: 10_000) {
            guard let session = try await sessions.find(id: device.sessionID) else { continue }
            if !mayChat(session) || session.chatUserID != device.userID {
                await end(device)
                ended += 1
            }
        }
        return ended
    }

    /// Does `body` as `userID` on a device of its own (the JWT login), logged out afterwards: the gateway's own work
    /// for a member who may not be signed in (the story reaper's redactions).
    func asMember<T: Sendable>(
        _ userID: String, deviceName: String, _ body: (MatrixClient, MatrixCredentials) async throws -> T
    ) async throws -> T {
        guard let localpart = localpart(of: userID) else { throw ChatError.notAllowed }
        let credentials = try await client.login(token: login.token(localpart: localpart), deviceName: deviceName)
        defer { Task { [client] in try? await client.logout(credentials) } }
        return try await body(client, credentials)
    }

    /// `@alice.c5:chat.test` → `alice.c5`, for this homeserver's accounts only.
    func localpart(of userID: String) -> String? {
        guard userID.hasPrefix("@"), userID.hasSuffix(":" + serverName) else { return nil }
        let localpart = userID.dropFirst().dropLast(serverName.count + 1)
        return localpart.isEmpty ? nil : String(localpart)
    }

    /// "Gatehouse · Chrome on Linux": how the member recognizes the device in another client's list.
    static func deviceName(_ device: SessionDevice?) -> String {
        let summary: (browser: String?, system: String?) = device?.summary ?? (nil, nil)
        let place = [summary.browser, summary.system].compactMap { $0 }.joined(separator: " on ")
        return place.isEmpty ? "Gatehouse" : "Gatehouse · \(place)"
    }
}
