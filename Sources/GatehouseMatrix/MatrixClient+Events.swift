import Foundation

/// Events other than text messages: a call's signalling, a story, a redaction; and the homeserver's TURN
/// credentials for calls.
extension MatrixClient {
    /// Sends an event of `type` into `room`; `transactionID` makes a retry arrive once.
    public func send(_ credentials: MatrixCredentials, room: String, type: String, content: JSONValue, transactionID: String) async throws(MatrixError)
        -> String
    {
        let path = "/_matrix/client/v3/rooms/\(Self.segment(room))/send/\(Self.segment(type))/\(Self.segment(transactionID))"
        guard let eventID = try await call(.PUT, path, as: credentials, json: content)["event_id"]?.string else {
            throw .invalidResponse("send without event_id")
        }
        return eventID
    }

    /// Replaces the text of `event` (`m.replace`): the new text and its markup, and the fallback (`* ` before them)
    /// for clients that do not know edits.
    public func replace(
        _ credentials: MatrixCredentials, room: String, event: String, text: String, formatted: String?, transactionID: String
    ) async throws(MatrixError) -> String {
        var content = Self.textContent("* " + text, formatted: formatted.map { "* " + $0 })
        content["m.new_content"] = .object(Self.textContent(text, formatted: formatted))
        content["m.relates_to"] = .object(["rel_type": .string("m.replace"), "event_id": .string(event)])
        return try await send(credentials, room: room, type: "m.room.message", content: .object(content), transactionID: transactionID)
    }

    /// One event of a room the member may see.
    public func event(_ credentials: MatrixCredentials, room: String, id: String) async throws(MatrixError) -> MatrixEvent {
        let data = try await raw(
            .GET, "/_matrix/client/v3/rooms/\(Self.segment(room))/event/\(Self.segment(id))", query: [], as: credentials, json: nil, timeout: timeout)
        do {
            return try JSONDecoder().decode(MatrixEvent.self, from: data)
        } catch {
            throw .invalidResponse("event: \(error)")
        }
    }

    /// Redacts (deletes) an event: its content is gone for everybody, on the homeserver too.
    public func redact(_ credentials: MatrixCredentials, room: String, event: String, reason: String, transactionID: String) async throws(MatrixError) {
        let path = "/_matrix/client/v3/rooms/\(Self.segment(room))/redact/\(Self.segment(event))/\(Self.segment(transactionID))"
        _ = try await call(.PUT, path, as: credentials, json: .object(["reason": .string(reason)]))
    }

    /// Reacts to `event` with `key` (`m.reaction`, an `m.annotation` of it).
    public func react(_ credentials: MatrixCredentials, room: String, event: String, key: String, transactionID: String) async throws(MatrixError)
        -> String
    {
        let relation: JSONValue = .object(["rel_type": .string("m.annotation"), "event_id": .string(event), "key": .string(key)])
        return try await send(credentials, room: room, type: "m.reaction", content: .object(["m.relates_to": relation]), transactionID: transactionID)
    }

    /// The reactions to `event` (its `m.annotation` relations of type `m.reaction`), oldest first, as far as
    /// `pages` of a hundred go.
    public func reactions(_ credentials: MatrixCredentials, room: String, event: String, pages: Int = 5) async throws(MatrixError) -> [Reaction] {
        let path = "/_matrix/client/v1/rooms/\(Self.segment(room))/relations/\(Self.segment(event))/m.annotation/m.reaction"
        var found: [Reaction] = []
        var from: String?
        for _ in 0..<pages {
            var query = [("limit", "100"), ("dir", "f")]
            if let from { query.append(("from", from)) }
            let answer = try await call(.GET, path, query: query, as: credentials)
            found += Self.events(answer["chunk"]).compactMap(Reaction.init)
            guard let next = answer["next_batch"]?.string else { break }
            from = next
        }
        return found
    }

    /// The events of an answer's list (those that are events: another value is left out).
    static func events(_ list: JSONValue?) -> [MatrixEvent] {
        (list?.array ?? []).compactMap { value in
            guard let data = try? JSONEncoder().encode(value) else { return nil }
            return try? JSONDecoder().decode(MatrixEvent.self, from: data)
        }
    }

    /// Messages whose text holds `term` (the homeserver's full-text search), newest first, in the member's rooms or
    /// in `room`; `next` (the answer's own token) for the page after.
    public func search(_ credentials: MatrixCredentials, term: String, room: String?, limit: Int, next: String?) async throws(MatrixError)
        -> (events: [MatrixEvent], count: Int?, next: String?)
    {
        var filter: [String: JSONValue] = ["limit": .number(Double(limit)), "types": .array([.string("m.room.message")])]
        if let room { filter["rooms"] = .array([.string(room)]) }
        let roomEvents: JSONValue = .object([
            "search_term": .string(term), "keys": .array([.string("content.body")]), "order_by": .string("recent"), "filter": .object(filter),
        ])
        let answer = try await call(
            .POST, "/_matrix/client/v3/search", query: next.map { [("next_batch", $0)] } ?? [], as: credentials,
            json: .object(["search_categories": .object(["room_events": roomEvents])]))
        let found = answer["search_categories"]?["room_events"]
        let results = (found?["results"]?.array ?? []).compactMap { $0["result"] }
        return (Self.events(.array(results)), found?["count"]?.int, found?["next_batch"]?.string)
    }

    /// The room's lines around `event`: those before it and after it (`limit` in all), oldest first, with the token
    /// before them for older ones.
    public func context(_ credentials: MatrixCredentials, room: String, event: String, limit: Int) async throws(MatrixError)
        -> (events: [MatrixEvent], start: String?)
    {
        let path = "/_matrix/client/v3/rooms/\(Self.segment(room))/context/\(Self.segment(event))"
        let answer = try await call(.GET, path, query: [("limit", String(limit))], as: credentials)
        let middle = Self.events(answer["event"].map { .array([$0]) })
        return (Self.events(answer["events_before"]).reversed() + middle + Self.events(answer["events_after"]), answer["start"]?.string)
    }

    /// Says the member is typing in `room` (for `timeout` at most, unless said again) or has stopped.
    public func typing(_ credentials: MatrixCredentials, room: String, typing: Bool, timeout: Duration) async throws(MatrixError) {
        var content: [String: JSONValue] = ["typing": .bool(typing)]
        if typing { content["timeout"] = .number(Double(timeout.components.seconds * 1000)) }
        let path = "/_matrix/client/v3/rooms/\(Self.segment(room))/typing/\(Self.segment(credentials.userID))"
        _ = try await call(.PUT, path, as: credentials, json: .object(content))
    }

    /// Sets a state event of the room (its name, topic, power levels); its event id.
    @discardableResult
    public func setState(_ credentials: MatrixCredentials, room: String, type: String, stateKey: String = "", content: JSONValue) async throws(MatrixError)
        -> String?
    {
        let path = "/_matrix/client/v3/rooms/\(Self.segment(room))/state/\(Self.segment(type))/\(Self.segment(stateKey))"
        return try await call(.PUT, path, as: credentials, json: content)["event_id"]?.string
    }

    /// A state event's content as the room has it now.
    public func state(_ credentials: MatrixCredentials, room: String, type: String, stateKey: String = "") async throws(MatrixError) -> JSONValue {
        try await call(.GET, "/_matrix/client/v3/rooms/\(Self.segment(room))/state/\(Self.segment(type))/\(Self.segment(stateKey))", as: credentials)
    }

    /// Removes a member from the room (a kick: they may be invited again).
    public func remove(_ credentials: MatrixCredentials, room: String, user: String) async throws(MatrixError) {
        _ = try await call(.POST, "/_matrix/client/v3/rooms/\(Self.segment(room))/kick", as: credentials, json: .object(["user_id": .string(user)]))
    }

    /// Mutes a room for the member (its push rule, `PushRules.muteRule`), or unmutes it (the rule removed; none is
    /// no error).
    public func setMuted(_ credentials: MatrixCredentials, room: String, muted: Bool) async throws(MatrixError) {
        let path = "/_matrix/client/v3/pushrules/global/override/\(Self.segment(room))"
        guard !muted else {
            _ = try await call(.PUT, path, as: credentials, json: PushRules.muteRule(room: room))
            return
        }
        do {
            _ = try await call(.DELETE, path, as: credentials)
        } catch .refused(404, _, _) {
            // Not muted: nothing to remove.
        }
    }

    /// The homeserver's TURN servers and the member's short-lived credentials for them (`turn_uris`,
    /// `turn_shared_secret`); `nil` when the homeserver has none configured.
    public func turnServer(_ credentials: MatrixCredentials) async throws(MatrixError) -> TurnServer? {
        let answer: JSONValue
        do {
            answer = try await call(.GET, "/_matrix/client/v3/voip/turnServer", as: credentials)
        } catch .refused(404, _, _) {
            return nil
        }
        let uris = answer["uris"]?.array?.compactMap(\.string) ?? []
        guard !uris.isEmpty else { return nil }
        return TurnServer(
            uris: uris, username: answer["username"]?.string ?? "", password: answer["password"]?.string ?? "", ttl: answer["ttl"]?.int ?? 0)
    }
}

extension MatrixClient {
    /// The gateway's app id among the member's pushers.
    public static let pusherAppID = "org.gatehouse.web"

    /// Points a pusher of the member's at the gateway's push gateway (`url`, `…/_matrix/push/v1/notify`): the
    /// homeserver posts each notifying event there under `pushKey`. The same key again replaces the pusher.
    public func setPusher(_ credentials: MatrixCredentials, pushKey: String, url: String, deviceName: String, language: String) async throws(MatrixError) {
        let body: JSONValue = .object([
            "kind": .string("http"), "app_id": .string(Self.pusherAppID), "pushkey": .string(pushKey), "app_display_name": .string("Gatehouse"),
            "device_display_name": .string(deviceName), "lang": .string(language), "append": .bool(false),
            "data": .object(["url": .string(url)]),
        ])
        _ = try await call(.POST, "/_matrix/client/v3/pushers/set", as: credentials, json: body)
    }

    /// Removes the member's pusher of `pushKey` (none is no error: the homeserver removes it quietly too).
    public func removePusher(_ credentials: MatrixCredentials, pushKey: String) async throws(MatrixError) {
        let body: JSONValue = .object(["kind": .null, "app_id": .string(Self.pusherAppID), "pushkey": .string(pushKey)])
        _ = try await call(.POST, "/_matrix/client/v3/pushers/set", as: credentials, json: body)
    }
}

/// A TURN server's addresses and the credentials a member's browser uses with it.
public struct TurnServer: Sendable, Equatable {
    public var uris: [String]
    public var username: String
    public var password: String
    /// Seconds the credentials hold.
    public var ttl: Int

    public init(uris: [String], username: String, password: String, ttl: Int) {
        self.uris = uris
        self.username = username
        self.password = password
        self.ttl = ttl
    }
}

extension MatrixClient {
    /// The member's story room: private, its name "Stories", the people invited who may see it; only its creator may
    /// post stories in it (`events` power 100), anyone in it may mark one seen.
    public func createStoryRoom(_ credentials: MatrixCredentials, invite: [String]) async throws(MatrixError) -> String {
        let body: JSONValue = .object([
            "preset": .string("private_chat"), "name": .string("Stories"), "invite": .array(invite.map(JSONValue.string)),
            "creation_content": .object(["type": .string(Room.storiesType)]),
            "power_level_content_override": .object(["events": .object([Story.eventType: .number(100)])]),
        ])
        guard let roomID = try await call(.POST, "/_matrix/client/v3/createRoom", as: credentials, json: body)["room_id"]?.string else {
            throw .invalidResponse("createRoom without room_id")
        }
        return roomID
    }
}
