import AsyncHTTPClient
import Foundation
import GatehouseCore
import GatehouseMatrix
import NIOHTTP1

/// Members' accounts on a Synapse homeserver, through its admin API (with an admin's access token):
///
/// - `GET /_synapse/admin/v1/username_available`: whether a name can be had (the public `/register/available` is
///   closed when registration is);
/// - `GET /_synapse/admin/v1/auth_providers/{provider}/users/{sub}`: the account linked to a member's SSO subject;
/// - `GET` and `PUT /_synapse/admin/v2/users/{user_id}`: an account, made or changed, with `external_ids` linking it to
///   the member's subject (the link Synapse's own OIDC sign-in follows, so the chat app's sign-in through the identity
///   provider lands on this account);
/// - `POST /_synapse/admin/v1/deactivate/{user_id}`: an account ended.
public struct SynapseChatBackend: ChatBackend {
    let client: MatrixClient
    let admin: MatrixAdmin
    let homeserver: URL
    let serverName: String
    let authProvider: String
    /// The gateway's JWT login, when it serves chat itself: members then reach the homeserver through the gateway
    /// only, and the homeserver needs no sign-in of its own for browsers.
    let loginToken: LoginToken?

    public init(
        http: HTTPClient, homeserver: URL, serverName: String, adminToken: String, authProvider: String, loginToken: LoginToken? = nil,
        timeoutSeconds: Int
    ) {
        self.client = MatrixClient(http: http, homeserver: homeserver, timeoutSeconds: timeoutSeconds)
        self.admin = MatrixAdmin(client: client, token: adminToken)
        self.homeserver = homeserver
        self.serverName = serverName
        self.authProvider = authProvider
        self.loginToken = loginToken
    }

    /// The Matrix ID a username becomes: localparts are lower case.
    func userID(forUsername username: String) -> String {
        "@\(username.lowercased()):\(serverName)"
    }

    public func refusal(ofName localpart: String) async throws(ChatBackendError) -> ChatNameRefusal? {
        let answer = try await call(.GET, "/_synapse/admin/v1/username_available", query: [("username", localpart.lowercased())])
        if answer.status == 200, answer.json["available"]?.bool == true { return nil }
        switch answer.errcode {
        case "M_USER_IN_USE": return .taken
        case "M_INVALID_USERNAME": return .invalid
        case "M_EXCLUSIVE": return .reserved
        default: throw answer.failure
        }
    }

    public func account(linkedTo sub: String) async throws(ChatBackendError) -> ChatAccount? {
        let answer = try await call(.GET, "/_synapse/admin/v1/auth_providers/\(Self.segment(authProvider))/users/\(Self.segment(sub))")
        if answer.status == 404 { return nil }
        guard answer.status == 200, let userID = answer.json["user_id"]?.string else { throw answer.failure }
        // The lookup is cached by the homeserver: the account itself says whether it is live and still linked.
        guard let user = try await user(userID), user.isLive, user.links(sub: sub, provider: authProvider) else { return nil }
        return ChatAccount(userID: userID)
    }

    public func createAccount(_ request: ChatAccountRequest) async throws(ChatBackendError) -> ChatAccount? {
        if let linked = try await account(linkedTo: request.sub) { return linked }
        let userID = userID(forUsername: request.username)
        if let existing = try await user(userID) {
            // An account of this name is the member's own only when an earlier attempt made it for them.
            guard existing.isLive, existing.links(sub: request.sub, provider: authProvider) else { throw .nameTaken }
        }
        let body: JSONValue = .object([
            "displayname": .string(request.displayName),
            "threepids": Self.threepids(request.phoneNumber),
            "external_ids": .array([.object(["auth_provider": .string(authProvider), "external_id": .string(request.sub)])]),
        ])
        let answer = try await call(.PUT, "/_synapse/admin/v2/users/\(Self.segment(userID))", json: body)
        guard answer.status == 200 || answer.status == 201 else { throw answer.failure }
        return ChatAccount(userID: userID)
    }

    public func update(_ account: ChatAccount, displayName: String?, phoneNumber: PhoneNumber?) async throws(ChatBackendError) {
        var body: [String: JSONValue] = [:]
        if let displayName { body["displayname"] = .string(displayName) }
        if let phoneNumber { body["threepids"] = Self.threepids(phoneNumber) }
        guard !body.isEmpty else { return }
        let answer = try await call(.PUT, "/_synapse/admin/v2/users/\(Self.segment(account.userID))", json: .object(body))
        guard answer.status == 200 else { throw answer.failure }
    }

    public func deactivate(_ account: ChatAccount) async throws(ChatBackendError) {
        let path = Self.segment(account.userID)
        let ended = try await call(.POST, "/_synapse/admin/v1/deactivate/\(path)", json: .object(["erase": .bool(false)]))
        guard ended.status == 200 else { throw ended.failure }
        // A deactivated account keeps its link: without this the member's next upgrade could not link a new one.
        let unlinked = try await call(.PUT, "/_synapse/admin/v2/users/\(path)", json: .object(["external_ids": .array([])]))
        guard unlinked.status == 200 else { throw unlinked.failure }
    }

    public func problems() async -> [String] {
        do {
            let whoami = try await call(.GET, "/_matrix/client/v3/account/whoami")
            if whoami.status == 401 || whoami.status == 403 {
                return ["chat.admin_token_file: the homeserver does not accept the token (\(whoami.errcode ?? "HTTP \(whoami.status)"))"]
            }
            guard whoami.status == 200, let me = whoami.json["user_id"]?.string else { return ["chat.homeserver_url: \(whoami.failure)"] }
            var problems: [String] = []
            if !me.hasSuffix(":" + serverName) {
                problems.append("chat.server_name: the homeserver's users are …:\(me.split(separator: ":", maxSplits: 1).last ?? ""), not …:\(serverName)")
            }
            let account = try await call(.GET, "/_synapse/admin/v2/users/\(Self.segment(me))")
            if account.status == 403 || account.json["admin"]?.bool == false {
                problems.append("chat.admin_token_file: the token is \(me)'s, who is not a homeserver admin")
            } else if account.status != 200 {
                problems.append("chat.homeserver_url: the admin API answered HTTP \(account.status) (is /_synapse/admin reachable from the gateway?)")
            }
            let login = try await call(.GET, "/_matrix/client/v3/login", authorized: false)
            let flows = login.json["flows"]?.array ?? []
            if let loginToken {
                problems += await jwtLoginProblems(flows: flows, token: loginToken, admin: me)
            } else {
                let providers = flows.flatMap { flow in (flow["identity_providers"]?.array ?? []).compactMap { $0["id"]?.string } }
                if !providers.contains(authProvider) {
                    problems.append(
                        "chat.auth_provider: the homeserver has no OIDC provider \"\(authProvider)\" (it has: "
                            + (providers.isEmpty ? "none" : providers.joined(separator: ", "))
                            + "); members' sign-in to the chat app would not find the accounts the gateway makes")
                }
            }
            return problems
        } catch {
            return ["chat.homeserver_url: cannot reach the homeserver at \(homeserver.absoluteString): \(error)"]
        }
    }

    /// The gateway's JWT login, tried as the admin account (the one account the gateway may always name), its device
    /// logged out at once: the homeserver offers it and takes the gateway's secret and issuer.
    func jwtLoginProblems(flows: [JSONValue], token: LoginToken, admin: String) async -> [String] {
        guard flows.contains(where: { $0["type"]?.string == MatrixClient.jwtLoginType }) else {
            return ["chat.jwt_secret_file: the homeserver offers no JWT login (\(MatrixClient.jwtLoginType)); its homeserver.yaml needs jwt_config"]
        }
        do {
            let device = try await client.login(token: token.token(localpart: String(admin.dropFirst().prefix { $0 != ":" })), deviceName: "Gatehouse check-config")
            try? await client.logout(device)
            return []
        } catch {
            return [
                "chat.jwt_secret_file: the homeserver refused the gateway's JWT login (\(error.reason)): its jwt_config needs the same secret, "
                    + "algorithm HS256 and issuer \"\(token.issuer)\""
            ]
        }
    }

    // MARK: - The admin API

    /// An account as the admin API shows it.
    struct User {
        let json: JSONValue

        var isLive: Bool { json["deactivated"]?.bool != true }

        func links(sub: String, provider: String) -> Bool {
            (json["external_ids"]?.array ?? []).contains { $0["auth_provider"]?.string == provider && $0["external_id"]?.string == sub }
        }
    }

    func user(_ userID: String) async throws(ChatBackendError) -> User? {
        let answer = try await call(.GET, "/_synapse/admin/v2/users/\(Self.segment(userID))")
        if answer.status == 404 { return nil }
        guard answer.status == 200 else { throw answer.failure }
        return User(json: answer.json)
    }

    /// The admin API's answer; no answer at all is the homeserver unavailable.
    func call(_ method: HTTPMethod, _ path: String, query: [(String, String)] = [], json: JSONValue? = nil, authorized: Bool = true)
        async throws(ChatBackendError) -> MatrixAdmin.Answer
    {
        do {
            return try await admin.call(method, path, query: query, json: json, authorized: authorized)
        } catch {
            throw .unavailable(error.description)
        }
    }

    static func segment(_ text: String) -> String {
        MatrixAdmin.segment(text)
    }

    /// A phone number as Matrix keeps an `msisdn` (its digits, without the `+`), the account's one third-party id.
    static func threepids(_ number: PhoneNumber) -> JSONValue {
        .array([.object(["medium": .string("msisdn"), "address": .string(String(number.e164.drop { $0 == "+" }))])])
    }
}

extension MatrixAdmin.Answer {
    /// A failure the caller did not expect: server errors may pass, anything else will not by itself.
    var failure: ChatBackendError {
        status >= 500 || status == 429
            ? .unavailable("HTTP \(status)\(errcode.map { " \($0)" } ?? "")")
            : .refused(status: status, errcode: errcode, message: message)
    }
}

extension ChatConfiguration {
    /// The backend these settings name (the loader made sure a synapse backend has what it needs).
    func backend(http: HTTPClient) -> any ChatBackend {
        guard backend == .synapse, let url = homeserverURL, let serverName, let adminToken else { return NoChatBackend() }
        return SynapseChatBackend(
            http: http, homeserver: url, serverName: serverName, adminToken: adminToken, authProvider: authProvider,
            loginToken: jwtSecret.map { LoginToken(secret: $0) }, timeoutSeconds: timeoutSeconds)
    }

    /// What stops the gateway from using the configured homeserver (`check-config` asks it): the homeserver
    /// reached with the gateway's own settings, each problem a sentence starting with its key path.
    public func problems() async -> [String] {
        guard backend != .none else { return [] }
        var client = HTTPClient.Configuration(redirectConfiguration: .disallow, timeout: .init(connect: .seconds(Int64(timeoutSeconds))))
        if let tls {
            switch UpstreamTLS.load(tls, keyPath: "chat.tls") {
            case .success(let loaded): client.tlsConfiguration = loaded
            case .failure(let error): return error.problems.map(\.description)
            }
        }
        let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: client)
        let problems = await backend(http: http).problems()
        try? await http.shutdown()
        return problems
    }
}
