import AsyncHTTPClient
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import Testing

@testable import Gatehouse

/// A real Synapse homeserver (from PyPI, through `scripts/synapse`) in a temporary directory on a free port. The shared
/// one (started at first use, stopped when the process exits) signs members in through an OIDC provider entry `oidc`,
/// as an organization's does for a chat app of its own; one of a test's own may instead be configured as the docs
/// recommend for the gateway's own chat: no sign-in for browsers, the gateway's JWT login only.
struct TestSynapse: Sendable {
    let directory: String
    let url: URL
    let adminToken: String
    /// The secret of its JWT login (`jwt_config`), for the gateway's own chat.
    let jwtSecret: String

    static let serverName = "chat.test"

    static let shared = Task { try await start(newDirectory()) }

    static func newDirectory() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-test-synapse-\(UUID().uuidString.prefix(8))").path
    }

    /// Starts (or starts again) the homeserver in `directory`; the start (seconds) runs on NIO's blocking pool.
    static func start(_ directory: String, oidcSignIn: Bool = true) async throws -> TestSynapse {
        let started = try await BlockingWork.run {
            if !FileManager.default.fileExists(atPath: directory) { stopAtExit(directory) }
            return TestPostgres.script(
                "synapse", ["start", directory, "", serverName],
                environment: oidcSignIn ? ["SYNAPSE_OIDC_ISSUER=https://idp.example.org/realms/heritage"] : [])
        }
        guard started.status == 0, let line = started.output.split(separator: "\n").last, let url = URL(string: String(line)) else {
            throw TestSynapseError.notStarted(started.output)
        }
        let token = try String(contentsOfFile: directory + "/admin_token", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let secret = try String(contentsOfFile: directory + "/jwt_secret", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        return TestSynapse(directory: directory, url: url, adminToken: token, jwtSecret: secret)
    }

    /// Every homeserver the process started, stopped and removed at its exit.
    private static let startedDirectories = NIOLockedValueBox<[String]>([])
    private static let stopsAtExit: Void = {
        atexit {
            for directory in TestSynapse.startedDirectories.withLockedValue({ $0 }) {
                _ = TestPostgres.script("synapse", ["stop", directory])
                try? FileManager.default.removeItem(atPath: directory)
            }
        }
    }()

    private static func stopAtExit(_ directory: String) {
        _ = stopsAtExit
        startedDirectories.withLockedValue { $0.append(directory) }
    }

    /// A homeserver of the test's own, stopped and removed afterwards.
    static func own<T>(oidcSignIn: Bool = true, _ body: (TestSynapse) async throws -> T) async throws -> T {
        let server = try await start(newDirectory(), oidcSignIn: oidcSignIn)
        do {
            let result = try await body(server)
            try await server.stop()
            return result
        } catch {
            try? await server.stop()
            throw error
        }
    }

    func stop() async throws {
        let directory = directory
        _ = try await BlockingWork.run { TestPostgres.script("synapse", ["stop", directory]) }
    }

    /// The gateway's settings for this homeserver.
    var chat: ChatConfiguration {
        ChatConfiguration(backend: .synapse, homeserverURL: url, serverName: Self.serverName, adminToken: adminToken)
    }

    /// The same, with the JWT login: the gateway holds members' Matrix sessions and serves its own chat.
    var chatWithSessions: ChatConfiguration {
        var chat = chat
        chat.jwtSecret = jwtSecret
        return chat
    }

    /// An admin API call of the test's own (to prepare or read what the homeserver holds): the status and JSON answer.
    func admin(_ method: HTTPMethod, _ path: String, json: [String: Any]? = nil) async throws -> (status: Int, json: [String: Any]) {
        try await call(method, path, json: json, token: adminToken)
    }

    /// Any call of the homeserver's APIs, with `token` if given.
    func call(_ method: HTTPMethod, _ path: String, json: [String: Any]? = nil, token: String?) async throws -> (status: Int, json: [String: Any]) {
        var request = HTTPClientRequest(url: url.absoluteString + path)
        request.method = method
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        if let json { request.body = .bytes(ByteBuffer(data: try JSONSerialization.data(withJSONObject: json))) }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 1 << 20)
        return (Int(response.status.code), (try? JSONSerialization.jsonObject(with: Data(buffer: body))) as? [String: Any] ?? [:])
    }

    /// The account `@localpart:chat.test` as the admin API shows it, or `nil`.
    func user(_ localpart: String) async throws -> [String: Any]? {
        let (status, json) = try await admin(.GET, "/_synapse/admin/v2/users/@\(localpart):\(Self.serverName)")
        return status == 200 ? json : nil
    }
}

enum TestSynapseError: Error {
    case notStarted(String)
}
