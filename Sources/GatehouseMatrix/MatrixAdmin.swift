import Foundation
import NIOHTTP1

/// The homeserver's admin API (Synapse's `/_synapse/admin`) with an admin's access token, on the client's own
/// transport and typed JSON: what the gateway does for members who are not signed in to it (their accounts at the
/// upgrade, the story reaper's look at every story room). Each answer comes back whatever its status: the caller
/// says what a `404` or an `errcode` means for what it asked.
public struct MatrixAdmin: Sendable {
    let client: MatrixClient
    let token: String

    public init(client: MatrixClient, token: String) {
        self.client = client
        self.token = token
    }

    /// An answer of the homeserver's: its status and its JSON object (empty when the body was not one).
    public struct Answer: Sendable {
        public let status: Int
        public let json: JSONValue

        public var errcode: String? { json["errcode"]?.string }
        public var message: String? { json["error"]?.string }
    }

    /// Bodies the admin API sends back are small; more than this is not one of its answers.
    static let answerLimit = 1 << 20

    /// `path` with `query`, as the admin (`authorized`) or as nobody (the login flows any client may read).
    public func call(_ method: HTTPMethod, _ path: String, query: [(String, String)] = [], json: JSONValue? = nil, authorized: Bool = true)
        async throws(MatrixError) -> Answer
    {
        let (status, body) = try await client.exchange(
            method, path, query: query, bearer: authorized ? token : nil, json: json, timeout: client.timeout, limit: Self.answerLimit)
        let object = (try? JSONDecoder().decode(JSONValue.self, from: body)).flatMap { $0.object == nil ? nil : $0 }
        return Answer(status: status, json: object ?? .object([:]))
    }

    /// One path segment, escaped (`@alice:chat.example` → `%40alice%3Achat.example`).
    public static func segment(_ text: String) -> String {
        MatrixClient.segment(text)
    }
}
