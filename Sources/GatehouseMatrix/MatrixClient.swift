import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// The Matrix client-server API, called by the gateway as the member's device (server-side: the homeserver need not
/// face browsers). Each call takes the member's credentials; none is kept here.
public struct MatrixClient: Sendable {
    let http: HTTPClient
    let homeserver: URL
    let timeout: TimeAmount

    public init(http: HTTPClient, homeserver: URL, timeoutSeconds: Int) {
        self.init(http: http, homeserver: homeserver, timeout: .seconds(Int64(timeoutSeconds)))
    }

    public init(http: HTTPClient, homeserver: URL, timeout: TimeAmount) {
        self.http = http
        self.homeserver = homeserver
        self.timeout = timeout
    }

    /// Synapse's JWT login (`jwt_config`), the one login the gateway uses.
    public static let jwtLoginType = "org.matrix.login.jwt"

    // MARK: - Devices

    /// A new device of `localpart`'s account through the JWT login, named as the member will recognize it.
    public func login(token: String, deviceName: String) async throws(MatrixError) -> MatrixCredentials {
        let body: JSONValue = .object([
            "type": .string(Self.jwtLoginType), "token": .string(token), "initial_device_display_name": .string(deviceName),
        ])
        let answer = try await call(.POST, "/_matrix/client/v3/login", json: body)
        guard let userID = answer["user_id"]?.string, let deviceID = answer["device_id"]?.string, let accessToken = answer["access_token"]?.string else {
            throw .invalidResponse("login without user_id, device_id or access_token")
        }
        return MatrixCredentials(userID: userID, deviceID: deviceID, accessToken: accessToken)
    }

    /// Logs the device out: its token stops working and it leaves the account's device list. A token already
    /// invalid counts as done.
    public func logout(_ credentials: MatrixCredentials) async throws(MatrixError) {
        do {
            _ = try await call(.POST, "/_matrix/client/v3/logout", as: credentials, json: .object([:]))
        } catch .tokenInvalid {
            return
        }
    }

    // MARK: - Sync

    /// What changed since `since` (everything, the first time), waiting up to `wait` for news.
    public func sync(_ credentials: MatrixCredentials, since: String?, wait: Duration) async throws(MatrixError) -> SyncResponse {
        var query = [("timeout", String(wait.components.seconds * 1000)), ("filter", Self.syncFilter)]
        if let since { query.append(("since", since)) }
        let data = try await raw(.GET, "/_matrix/client/v3/sync", query: query, as: credentials, json: nil, timeout: timeout + .seconds(wait.components.seconds))
        do {
            return try JSONDecoder().decode(SyncResponse.self, from: data)
        } catch {
            throw .invalidResponse("sync: \(error)")
        }
    }

    /// The timeline's last 30 events a room, its whole state, receipts and who is typing; no presence.
    static let syncFilter = #"{"room":{"timeline":{"limit":30},"ephemeral":{"types":["m.receipt","m.typing"]}},"presence":{"types":[]}}"#

    // MARK: - Rooms

    /// Sends a text message, with its markup (`formatted`: Matrix's HTML) if it has any, and the members it mentions
    /// (`m.mentions`, always there: an empty list says it mentions nobody, whatever names its text holds);
    /// `transactionID` makes a retry of the same message arrive once.
    public func send(
        _ credentials: MatrixCredentials, room: String, text: String, formatted: String? = nil, replyTo: String? = nil, mentions: [String] = [],
        transactionID: String
    ) async throws(MatrixError) -> String {
        var content = Self.textContent(text, formatted: formatted)
        content["m.mentions"] = .object(["user_ids": .array(mentions.map(JSONValue.string))])
        if let replyTo { content["m.relates_to"] = .object(["m.in_reply_to": .object(["event_id": .string(replyTo)])]) }
        return try await send(credentials, room: room, type: "m.room.message", content: .object(content), transactionID: transactionID)
    }

    /// A text message's content: its body, and its markup (Matrix's HTML) if it has any.
    static func textContent(_ text: String, formatted: String?) -> [String: JSONValue] {
        var content: [String: JSONValue] = ["msgtype": .string("m.text"), "body": .string(text)]
        if let formatted {
            content["format"] = .string("org.matrix.custom.html")
            content["formatted_body"] = .string(formatted)
        }
        return content
    }

    /// A new room: a direct chat with one member (`direct`), or a group with a name; the others invited.
    public func createRoom(_ credentials: MatrixCredentials, name: String?, invite: [String], direct: Bool) async throws(MatrixError) -> String {
        var body: [String: JSONValue] = [
            "preset": .string(direct ? "trusted_private_chat" : "private_chat"), "is_direct": .bool(direct),
            "invite": .array(invite.map(JSONValue.string)),
        ]
        if let name { body["name"] = .string(name) }
        let answer = try await call(.POST, "/_matrix/client/v3/createRoom", as: credentials, json: .object(body))
        guard let roomID = answer["room_id"]?.string else { throw .invalidResponse("createRoom without room_id") }
        return roomID
    }

    public func invite(_ credentials: MatrixCredentials, room: String, user: String) async throws(MatrixError) {
        _ = try await call(.POST, "/_matrix/client/v3/rooms/\(Self.segment(room))/invite", as: credentials, json: .object(["user_id": .string(user)]))
    }

    public func join(_ credentials: MatrixCredentials, room: String) async throws(MatrixError) {
        _ = try await call(.POST, "/_matrix/client/v3/rooms/\(Self.segment(room))/join", as: credentials, json: .object([:]))
    }

    /// Leaves a room, or declines its invite.
    public func leave(_ credentials: MatrixCredentials, room: String) async throws(MatrixError) {
        _ = try await call(.POST, "/_matrix/client/v3/rooms/\(Self.segment(room))/leave", as: credentials, json: .object([:]))
    }

    /// Events before `from` (a token of the timeline), newest first, and the token before them (`nil`: the start).
    public func messages(_ credentials: MatrixCredentials, room: String, from: String?, limit: Int, types: [String]? = nil) async throws(MatrixError)
        -> (events: [MatrixEvent], end: String?)
    {
        var query = [("dir", "b"), ("limit", String(limit))]
        if let from { query.append(("from", from)) }
        if let types, let filter = try? JSONEncoder().encode(["types": types]) { query.append(("filter", String(decoding: filter, as: UTF8.self))) }
        let data = try await raw(.GET, "/_matrix/client/v3/rooms/\(Self.segment(room))/messages", query: query, as: credentials, json: nil, timeout: timeout)
        struct Page: Decodable {
            var chunk: [MatrixEvent]
            var end: String?
        }
        do {
            let page = try JSONDecoder().decode(Page.self, from: data)
            return (page.chunk, page.end)
        } catch {
            throw .invalidResponse("messages: \(error)")
        }
    }

    /// Marks the room read up to `event` (the read receipt others see, and the member's own marker).
    public func markRead(_ credentials: MatrixCredentials, room: String, event: String) async throws(MatrixError) {
        _ = try await call(
            .POST, "/_matrix/client/v3/rooms/\(Self.segment(room))/read_markers", as: credentials,
            json: .object(["m.fully_read": .string(event), "m.read": .string(event)]))
    }

    /// The member's direct chats (`m.direct`): user → rooms.
    public func directRooms(_ credentials: MatrixCredentials) async throws(MatrixError) -> [String: [String]] {
        do {
            let answer = try await call(.GET, "/_matrix/client/v3/user/\(Self.segment(credentials.userID))/account_data/m.direct", as: credentials)
            return (answer.object ?? [:]).mapValues { $0.array?.compactMap(\.string) ?? [] }
        } catch .refused(404, _, _) {
            return [:]
        }
    }

    public func setDirectRooms(_ credentials: MatrixCredentials, _ rooms: [String: [String]]) async throws(MatrixError) {
        let body = JSONValue.object(rooms.mapValues { .array($0.map(JSONValue.string)) })
        _ = try await call(.PUT, "/_matrix/client/v3/user/\(Self.segment(credentials.userID))/account_data/m.direct", as: credentials, json: body)
    }

    /// A user's display name, if they have one (`nil` too for no such user).
    public func displayName(_ credentials: MatrixCredentials, of user: String) async throws(MatrixError) -> String? {
        do {
            return try await call(.GET, "/_matrix/client/v3/profile/\(Self.segment(user))/displayname", as: credentials)["displayname"]?.string
        } catch .refused(404, _, _) {
            return nil
        }
    }

    /// The room's current state events.
    public func state(_ credentials: MatrixCredentials, room: String) async throws(MatrixError) -> [MatrixEvent] {
        let data = try await raw(.GET, "/_matrix/client/v3/rooms/\(Self.segment(room))/state", query: [], as: credentials, json: nil, timeout: timeout)
        do {
            return try JSONDecoder().decode([MatrixEvent].self, from: data)
        } catch {
            throw .invalidResponse("state: \(error)")
        }
    }

    // MARK: - Calls

    func call(
        _ method: HTTPMethod, _ path: String, query: [(String, String)] = [], as credentials: MatrixCredentials? = nil, json: JSONValue? = nil
    ) async throws(MatrixError) -> JSONValue {
        let data = try await raw(method, path, query: query, as: credentials, json: json, timeout: timeout)
        if data.isEmpty { return .object([:]) }
        do {
            return try JSONDecoder().decode(JSONValue.self, from: data)
        } catch {
            throw .invalidResponse("\(path): not JSON")
        }
    }

    func raw(
        _ method: HTTPMethod, _ path: String, query: [(String, String)], as credentials: MatrixCredentials?, json: JSONValue?, timeout: TimeAmount
    ) async throws(MatrixError) -> Data {
        let (status, data) = try await exchange(method, path, query: query, bearer: credentials?.accessToken, json: json, timeout: timeout)
        guard (200..<300).contains(status) else {
            let answer = try? JSONDecoder().decode(JSONValue.self, from: data)
            let errcode = answer?["errcode"]?.string ?? "M_UNKNOWN"
            if status == 401, errcode == "M_UNKNOWN_TOKEN" || errcode == "M_MISSING_TOKEN" { throw .tokenInvalid }
            throw .refused(status: status, errcode: errcode, message: answer?["error"]?.string ?? "")
        }
        return data
    }

    /// One request and the homeserver's answer whatever its status (the admin API's callers read the status); only
    /// no answer at all is an error.
    func exchange(
        _ method: HTTPMethod, _ path: String, query: [(String, String)], bearer: String?, json: JSONValue?, timeout: TimeAmount,
        limit: Int = 16 << 20
    ) async throws(MatrixError) -> (status: Int, body: Data) {
        var components = URLComponents()
        components.queryItems = query.isEmpty ? nil : query.map { URLQueryItem(name: $0.0, value: $0.1) }
        // `+` is a space to some servers' query parsers: escaped as the rest.
        let encodedQuery = components.percentEncodedQuery?.replacingOccurrences(of: "+", with: "%2B")
        let base = homeserver.absoluteString.hasSuffix("/") ? String(homeserver.absoluteString.dropLast()) : homeserver.absoluteString
        var request = HTTPClientRequest(url: base + path + (encodedQuery.map { "?" + $0 } ?? ""))
        request.method = method
        request.headers.add(name: "User-Agent", value: "Gatehouse")
        request.headers.add(name: "Accept", value: "application/json")
        if let bearer { request.headers.add(name: "Authorization", value: "Bearer \(bearer)") }
        if let json {
            request.headers.add(name: "Content-Type", value: "application/json")
            let body = (try? JSONEncoder().encode(json)) ?? Data("{}".utf8)
            request.body = .bytes(ByteBuffer(bytes: body))
        }
        do {
            let response = try await http.execute(request, timeout: timeout)
            let bytes = try await response.body.collect(upTo: limit)
            return (Int(response.status.code), Data(bytes.readableBytesView))
        } catch {
            throw .unreachable(String(describing: error))
        }
    }

    /// A path segment with everything but unreserved characters escaped (`!room:server` → `%21room%3Aserver`).
    static func segment(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")) ?? text
    }
}
