import Foundation

/// One member's device at the homeserver as the gateway holds it: the client and the device's credentials together,
/// so that what the chat's pages ask is done as that member and no caller handles (or mixes up) a member's token.
/// Handed out by whoever holds the devices (the gateway's `ChatSessions`), which is told first when the homeserver
/// refuses the token (`tokenRefused`: the device was logged out elsewhere, or its token expired) so that it can
/// replace the device.
public struct MatrixSession: Sendable {
    let client: MatrixClient
    public let credentials: MatrixCredentials
    let tokenRefused: @Sendable () async -> Void

    public init(client: MatrixClient, credentials: MatrixCredentials, tokenRefused: @escaping @Sendable () async -> Void) {
        self.client = client
        self.credentials = credentials
        self.tokenRefused = tokenRefused
    }

    func run<T>(_ body: (MatrixClient, MatrixCredentials) async throws(MatrixError) -> T) async throws(MatrixError) -> T {
        do {
            return try await body(client, credentials)
        } catch .tokenInvalid {
            await tokenRefused()
            throw .tokenInvalid
        }
    }

    // MARK: - Events

    /// Sends an event of `type`; `transactionID` makes a retry of the same event arrive once.
    public func send(room: String, type: String, content: JSONValue, transactionID: String) async throws(MatrixError) -> String {
        try await run { client, credentials throws(MatrixError) in
            try await client.send(credentials, room: room, type: type, content: content, transactionID: transactionID)
        }
    }

    /// Sends a text message, with its markup if it has any, in reply to `replyTo` if given, mentioning `mentions`.
    public func send(
        room: String, text: String, formatted: String? = nil, replyTo: String? = nil, mentions: [String] = [], transactionID: String
    ) async throws(MatrixError) -> String {
        try await run { client, credentials throws(MatrixError) in
            try await client.send(
                credentials, room: room, text: text, formatted: formatted, replyTo: replyTo, mentions: mentions, transactionID: transactionID)
        }
    }

    /// Events before `from`, newest first, and the token before them (`nil`: the start of the room).
    public func messages(room: String, from: String?, limit: Int, types: [String]? = nil) async throws(MatrixError)
        -> (events: [MatrixEvent], end: String?)
    {
        try await run { client, credentials throws(MatrixError) in try await client.messages(credentials, room: room, from: from, limit: limit, types: types) }
    }

    /// Messages whose text holds `term`, newest first, in the member's rooms or in `room`.
    public func search(term: String, room: String?, limit: Int, next: String?) async throws(MatrixError)
        -> (events: [MatrixEvent], count: Int?, next: String?)
    {
        try await run { client, credentials throws(MatrixError) in
            try await client.search(credentials, term: term, room: room, limit: limit, next: next)
        }
    }

    /// The room's lines around `event`, oldest first, and the token before them.
    public func context(room: String, event: String, limit: Int) async throws(MatrixError) -> (events: [MatrixEvent], start: String?) {
        try await run { client, credentials throws(MatrixError) in try await client.context(credentials, room: room, event: event, limit: limit) }
    }

    /// Replaces the text of one of the member's messages (an edit).
    public func replace(room: String, event: String, text: String, formatted: String?, transactionID: String) async throws(MatrixError) -> String {
        try await run { client, credentials throws(MatrixError) in
            try await client.replace(credentials, room: room, event: event, text: text, formatted: formatted, transactionID: transactionID)
        }
    }

    /// One event of a room the member is in.
    public func event(room: String, id: String) async throws(MatrixError) -> MatrixEvent {
        try await run { client, credentials throws(MatrixError) in try await client.event(credentials, room: room, id: id) }
    }

    /// Deletes an event (a redaction): its content gone for everybody.
    public func redact(room: String, event: String) async throws(MatrixError) {
        try await run { client, credentials throws(MatrixError) in
            try await client.redact(credentials, room: room, event: event, reason: "", transactionID: UUID().uuidString)
        }
    }

    /// Reacts to `event` with `key`.
    public func react(room: String, event: String, key: String) async throws(MatrixError) -> String {
        try await run { client, credentials throws(MatrixError) in
            try await client.react(credentials, room: room, event: event, key: key, transactionID: UUID().uuidString)
        }
    }

    /// The reactions to `event`, oldest first.
    public func reactions(room: String, event: String) async throws(MatrixError) -> [Reaction] {
        try await run { client, credentials throws(MatrixError) in try await client.reactions(credentials, room: room, event: event) }
    }

    /// Says the member is typing in `room` (for `timeout` at most) or has stopped.
    public func typing(room: String, typing: Bool, timeout: Duration = .seconds(25)) async throws(MatrixError) {
        try await run { client, credentials throws(MatrixError) in try await client.typing(credentials, room: room, typing: typing, timeout: timeout) }
    }

    /// Marks the room read up to `event` (the receipt others see and the member's own marker).
    public func markRead(room: String, event: String) async throws(MatrixError) {
        try await run { client, credentials throws(MatrixError) in try await client.markRead(credentials, room: room, event: event) }
    }

    // MARK: - Rooms

    public func join(room: String) async throws(MatrixError) {
        try await run { client, credentials throws(MatrixError) in try await client.join(credentials, room: room) }
    }

    /// Leaves a room, or declines its invite.
    public func leave(room: String) async throws(MatrixError) {
        try await run { client, credentials throws(MatrixError) in try await client.leave(credentials, room: room) }
    }

    public func invite(room: String, user: String) async throws(MatrixError) {
        try await run { client, credentials throws(MatrixError) in try await client.invite(credentials, room: room, user: user) }
    }

    /// A new room: a direct chat with one member (`direct`), or a group with a name; the others invited.
    public func createRoom(name: String?, invite: [String], direct: Bool) async throws(MatrixError) -> String {
        try await run { client, credentials throws(MatrixError) in try await client.createRoom(credentials, name: name, invite: invite, direct: direct) }
    }

    /// The member's story room, the people invited who may see it.
    public func createStoryRoom(invite: [String]) async throws(MatrixError) -> String {
        try await run { client, credentials throws(MatrixError) in try await client.createStoryRoom(credentials, invite: invite) }
    }

    /// Adds a room to the member's direct chats (`m.direct`), as other Matrix clients list them.
    public func addDirect(room: String, with user: String) async throws(MatrixError) {
        try await run { client, credentials throws(MatrixError) in
            var direct = try await client.directRooms(credentials)
            guard direct[user]?.contains(room) != true else { return }
            direct[user, default: []].append(room)
            try await client.setDirectRooms(credentials, direct)
        }
    }

    /// Renames a group.
    public func rename(room: String, name: String) async throws(MatrixError) {
        try await run { client, credentials throws(MatrixError) in
            try await client.setState(credentials, room: room, type: "m.room.name", content: .object(["name": .string(name)]))
        }
    }

    /// Sets a group's topic (empty: none).
    public func setTopic(room: String, topic: String) async throws(MatrixError) {
        try await run { client, credentials throws(MatrixError) in
            try await client.setState(credentials, room: room, type: "m.room.topic", content: .object(["topic": .string(topic)]))
        }
    }

    /// Removes a member from a group.
    public func remove(room: String, user: String) async throws(MatrixError) {
        try await run { client, credentials throws(MatrixError) in try await client.remove(credentials, room: room, user: user) }
    }

    /// Makes a member an admin of the room: the room's levels as they are now, with theirs raised.
    public func makeAdmin(room: String, user: String) async throws(MatrixError) {
        try await run { client, credentials throws(MatrixError) in
            var levels = try await client.state(credentials, room: room, type: "m.room.power_levels").object ?? [:]
            var users = levels["users"]?.object ?? [:]
            users[user] = .number(Double(PowerLevels.admin))
            levels["users"] = .object(users)
            try await client.setState(credentials, room: room, type: "m.room.power_levels", content: .object(levels))
        }
    }

    /// Mutes or unmutes the room for the member (`PushRules`).
    public func setMuted(room: String, muted: Bool) async throws(MatrixError) {
        try await run { client, credentials throws(MatrixError) in try await client.setMuted(credentials, room: room, muted: muted) }
    }

    // MARK: - Calls

    /// The homeserver's TURN server with the member's short-lived credentials; `nil` when it has none.
    public func turnServer() async throws(MatrixError) -> TurnServer? {
        try await run { client, credentials throws(MatrixError) in try await client.turnServer(credentials) }
    }
}
