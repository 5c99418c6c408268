import Crypto
import Foundation
import GatehouseCore
import NIOCore
import PostgresNIO
import Testing

@testable import Gatehouse
@testable import GatehouseStorage

/// Two gateway replicas on one PostgreSQL, each with its own state cache: what one does, the other sees within the
/// cache's invalidation bound (1 second), with no request to the other in between.
@Suite struct ReplicaTests {
    /// Polls `condition` until it holds; how long that took, or `nil` after `limit`.
    static func timeUntil(limit: Duration = .seconds(3), _ condition: () async throws -> Bool) async throws -> Duration? {
        let start = ContinuousClock.now
        while ContinuousClock.now - start < limit {
            if try await condition() { return ContinuousClock.now - start }
            try await Task.sleep(for: .milliseconds(20))
        }
        return nil
    }

    /// Whether `elapsed` came (not `nil`) and is under `bound`: a missed bound is a failed expectation, and the test
    /// goes on to stop its replicas normally.
    static func within(_ elapsed: Duration?, _ bound: Duration) -> Bool {
        guard let elapsed else { return false }
        return elapsed < bound
    }

    static func database(_ given: String?) async throws -> String {
        if let given { return given }
        return try await TestPostgres.freshDatabase()
    }

    static func withReplicas(
        url: String? = nil, configure more: @escaping (inout GatehouseConfiguration) -> Void = { _ in },
        _ body: (LiveGateway, LiveGateway) async throws -> Void
    ) async throws {
        let url = try await Self.database(url)
        try await EchoUpstream.run { upstream in
            let configure: (inout GatehouseConfiguration) -> Void = {
                $0.storage = StorageConfiguration.postgres(url)
                $0.apps = ProxyTests.apps(upstream)
                more(&$0)
            }
            try await LiveGateway.run(configure: configure) { first in
                try await LiveGateway.run(configure: configure) { second in try await body(first, second) }
            }
        }
    }

    @Test func aSessionAndItsJarAreSharedAndSigningOutEndsItOnTheOtherReplicaWithinASecond() async throws {
        try await Self.withReplicas { first, second in
            for replica in [first, second] { #expect(try await Self.timeUntil { replica.built.stateCache.isTrusted } != nil) }
            let cookies = try await ProxyTests.signedIn(first)
            // The second replica knows the member at once, and now holds the session and the (empty) jar in memory.
            #expect(try await second.get("/", cookies: cookies).status == 200)
            #expect(try ProxyTests.report(try await second.get("/apps/echo/echo/x", cookies: cookies)).headers["cookie"] == nil)

            _ = try await first.get("/apps/echo/set-cookie?c=app%3D1%3B%20Path%3D%2F", cookies: cookies)
            let jarSeen = try await Self.timeUntil {
                try ProxyTests.report(try await second.get("/apps/echo/echo/x", cookies: cookies)).headers["cookie"] == ["app=1"]
            }
            #expect(Self.within(jarSeen, .seconds(1)))
            // Served from memory in between, not by reading the store at every request.
            #expect(second.built.stateCache.statistics.hits > 0)

            // The app requests were the data plane's, on both replicas (the jar changed in the first's cache first).
            #expect(first.servedByDataPlane("echo") >= 1 && second.servedByDataPlane("echo") >= 1)

            let portal = try await first.get("/", cookies: cookies)
            let csrf = try #require(portal.body.firstMatch(of: /name="csrf" value="([^"]+)"/)?.1)
            #expect(try await second.get("/", cookies: cookies).status == 200)
            let before = second.servedByDataPlane("echo")
            #expect(try await second.get("/apps/echo/echo/x", cookies: cookies).status == 200)
            #expect(second.servedByDataPlane("echo") == before + 1)
            _ = try await first.post("/signout", form: [("csrf", String(csrf))], cookies: cookies)
            // The data plane reads the cache the invalidation empties: the old cookie is refused there too.
            let refused = try await Self.timeUntil {
                try await second.get("/apps/echo/echo/x", cookies: cookies).location?.hasPrefix("/signin") == true
            }
            #expect(Self.within(refused, .seconds(1)))
            #expect(try await second.get("/", cookies: cookies).location == "/signin")
        }
    }

    /// A cookie an app sets in an answer the data plane serves is in the shared store before that answer reaches
    /// the member: the member's next request, here at once and on the other replica, which has never read this
    /// jar, finds it (the write-behind alone would store it up to 50 ms later).
    @Test func aCookieAnAppSetsIsStoredBeforeItsAnswerReachesTheMember() async throws {
        try await Self.withReplicas { first, second in
            for replica in [first, second] { #expect(try await Self.timeUntil { replica.built.stateCache.isTrusted } != nil) }
            let cookies = try await ProxyTests.signedIn(first)
            _ = try await first.get("/apps/echo/echo/warm", cookies: cookies)  // the jar in the first replica's memory
            let before = first.servedByDataPlane("echo")
            _ = try await first.get("/apps/echo/set-cookie?c=app%3D2%3B%20Path%3D%2F", cookies: cookies)
            #expect(first.servedByDataPlane("echo") == before + 1)
            #expect(try ProxyTests.report(try await second.get("/apps/echo/echo/x", cookies: cookies)).headers["cookie"] == ["app=2"])
        }
    }

    /// The upgrade flow continues on whichever replica the next request reaches: its steps alternate between the
    /// two, and the registration raises the member's level on both.
    @Test func anUpgradeFlowContinuesOnWhicheverReplicaAnswers() async throws {
        try await Self.withReplicas(configure: { $0.registration.pinBcryptCost = 4 }) { first, second in
            let onFirst = try await UpgradeFlowTests.Member.signIn(first, as: "olive")
            let onSecond = UpgradeFlowTests.Member(gateway: second, cookies: onFirst.cookies)
            #expect(try await onSecond.get("/upgrade?from=portal").location == Paths.upgrade(.phone))
            #expect(try await onFirst.post(Paths.upgrade(.phone), [("phone", "+15550100007")]).location == Paths.upgrade(.code))
            // The development sender's inbox is the sending replica's; the flow itself is in the store.
            let code = try await onFirst.inboxCode()
            #expect(try await onSecond.get(Paths.upgrade(.code)).status == 200)
            #expect(try await onSecond.post(Paths.upgrade(.code), [("code", code)]).location == Paths.upgrade(.username))
            #expect(try await onFirst.post(Paths.upgrade(.username), [("username", "olive.r")]).location == Paths.upgrade(.pin))
            #expect(
                try await onSecond.post(Paths.upgrade(.pin), [("pin", "2580"), ("pin_confirmation", "2580")]).location == Paths.upgrade(.profile))
            let done = try await onFirst.post(Paths.upgrade(.profile), [("display_name", "Olive R"), ("discoverability", "everybody")])
            #expect(done.location?.hasPrefix(Paths.upgradeDone) == true)
            // Registered on both (the other within the invalidation bound): the flow's pages send the member on
            // instead of asking again.
            #expect(try await onFirst.get(Paths.upgrade(.phone)).location == Paths.chats)
            let registered = try await Self.timeUntil { try await onSecond.get(Paths.upgrade(.phone)).location == Paths.chats }
            #expect(Self.within(registered, .seconds(1)))
        }
    }

    /// A host-mounted app's handoff code, issued by one replica, is redeemed by the other, once; the grant it
    /// gives works on both.
    @Test func aHandoffCodeFromOneReplicaIsRedeemedOnceByTheOther() async throws {
        try await Self.withReplicas(configure: { configuration in
            configuration.appsDomain = "apps.localhost"
            configuration.apps = configuration.apps.map { app in
                var app = app
                app.mount = .host
                return app
            }
        }) { first, second in
            let session = try await ProxyTests.signedIn(first)
            let slug = try #require(first.configuration.apps.first?.slug)
            let start = try await first.get("/echo/x", cookies: [:], headers: HostMountTests.host(slug, first))
            var appCookies = BrowserCookies()
            appCookies.absorb(start)
            let back = try await first.get(try #require(start.location), cookies: session)
            let handoff = try #require(back.location?.firstMatch(of: /\/__gatehouse\/handoff\?code=.+/)?.0)
            let redeem = { (replica: LiveGateway) in
                try await replica.get(String(handoff), cookies: appCookies.values, headers: HostMountTests.host(slug, replica))
            }
            let redeemed = try await redeem(second)
            #expect(redeemed.status == 303 && redeemed.location == "/echo/x")
            // Spent: the same code on the replica that issued it is refused.
            #expect(try await redeem(first).status == 403)
            let grant = try #require(redeemed.setCookies.first { $0.hasPrefix("gatehouse_app=") })
            let value = String(grant.dropFirst("gatehouse_app=".count).prefix { $0 != ";" })
            for replica in [first, second] {
                let reply = try await replica.get("/echo/x", cookies: ["gatehouse_app": value], headers: HostMountTests.host(slug, replica))
                #expect(reply.status == 200)
            }
        }
    }

    /// A back-channel logout sent to one replica ends the provider session's gateway sessions on both within a
    /// second, and nothing else; forged, misused and replayed tokens get `400` and end nothing. The provider is a
    /// real HTTP one serving discovery and keys; the sessions are made in the store, as its sign-ins would have.
    @Test func aBackChannelLogoutOnOneReplicaEndsTheSessionOnBoth() async throws {
        let provider = try await TestProvider()
        let url = try await TestPostgres.freshDatabase()
        let sessions: [(cookie: String, sub: String, sid: String)] = [
            ("ada-1", "ada", "sid-1"), ("ada-2", "ada", "sid-2"), ("bob-1", "bob", "sid-3"),
        ]
        try await Stores.postgres(TestPostgres.connect(url), keyring: .forTests).whileRunning { stores in
            for (cookie, sub, sid) in sessions {
                var session = SessionLifecycleTests.session(cookie: cookie, sub: sub, providerSession: sid)
                session.tokens.refreshToken = nil
                try await stores.sessions.insert(session)
            }
        }
        try await TestIssuer.run(provider) { issuer in
            try await Self.withReplicas(
                url: url,
                configure: {
                    $0.oidc.issuer = issuer
                    $0.oidc.clientID = TestProvider.clientID
                }
            ) { first, second in
                for replica in [first, second] { #expect(try await Self.timeUntil { replica.built.stateCache.isTrusted } != nil) }
                let cookieName = first.configuration.cookie.name
                /// Whether every one of `cookies` is a signed-in session on `replica`.
                func signedIn(_ replica: LiveGateway, _ cookies: String...) async throws -> Bool {
                    for cookie in cookies where try await replica.get("/", cookies: [cookieName: cookie]).status != 200 { return false }
                    return true
                }
                func send(_ token: String, to replica: LiveGateway) async throws -> LiveGateway.Reply {
                    try await replica.post(Paths.backChannelLogout, form: [("logout_token", token)], cookies: [:])
                }
                for replica in [first, second] { #expect(try await signedIn(replica, "ada-1", "bob-1")) }

                let (modulus, _) = try provider.rsaKey.publicKey.getKeyPrimitives()
                /// A logout token's claims for Ada's first provider session from this issuer, changed by `change`.
                func claims(_ change: (inout LogoutClaims) -> Void = { _ in }) -> LogoutClaims {
                    var claims = LogoutClaims(iss: issuer, sub: "ada", sid: "sid-1")
                    change(&claims)
                    return claims
                }
                let hostile: [(String, String)] = [
                    ("another key", try await TestProvider().sign(logout: claims())),
                    ("alg none", try TestProvider.forge(header: ["alg": "none"], claims: claims())),
                    (
                        "HMAC",
                        try TestProvider.forge(header: ["alg": "HS256", "kid": "rsa-1"], claims: claims()) {
                            Data(HMAC<SHA256>.authenticationCode(for: $0, using: SymmetricKey(data: modulus)))
                        }
                    ),
                    ("wrong iss", try await provider.sign(logout: claims { $0.iss = "https://evil.example" })),
                    ("wrong aud", try await provider.sign(logout: claims { $0.aud = "other" })),
                    ("a nonce", try await provider.sign(logout: claims { $0.nonce = "n" })),
                    ("no events", try await provider.sign(logout: claims { $0.events = nil })),
                    ("expired", try await provider.sign(logout: claims { ($0.iat, $0.exp) = (1_000, 2_000) })),
                ]
                for (name, token) in hostile {
                    let reply = try await send(token, to: second)
                    #expect(reply.status == 400 && reply.body.contains("invalid_request"), "\(name)")
                    #expect(reply.headers.first(name: "Cache-Control") == "no-store", "\(name)")
                }
                // Not a form with one logout_token: refused the same way.
                let twice = try await second.post(Paths.backChannelLogout, form: [("logout_token", "a"), ("logout_token", "b")], cookies: [:])
                let asJSON = try await second.send(
                    .POST, Paths.backChannelLogout, cookies: [:], headers: [("Content-Type", "application/json")], body: "{\"logout_token\":\"x\"}")
                #expect(twice.status == 400 && asJSON.status == 400)
                for replica in [first, second] { #expect(try await signedIn(replica, "ada-1")) }

                let genuine = try await provider.sign(logout: claims())
                let accepted = try await send(genuine, to: second)
                #expect(accepted.status == 200 && accepted.headers.first(name: "Cache-Control") == "no-store", "\(accepted.body)")
                let refused = try await Self.timeUntil { try await !signedIn(first, "ada-1") }
                #expect(Self.within(refused, .seconds(1)))
                #expect(try await !signedIn(second, "ada-1"))
                // The member's other provider session, and other members, are untouched.
                #expect(try await signedIn(first, "ada-2", "bob-1"))
                // The same token again, on either replica: a replay.
                for replica in [first, second] { #expect(try await send(genuine, to: replica).status == 400) }

                // `sub` alone ends every session of that member.
                #expect(try await send(try await provider.sign(logout: claims { ($0.sub, $0.sid) = ("bob", nil) }), to: first).status == 200)
                #expect(Self.within(try await Self.timeUntil { try await !signedIn(second, "bob-1") }, .seconds(1)))
                #expect(try await signedIn(second, "ada-2"))
            }
        }
    }

    /// PostgreSQL stops under load on both replicas and starts again. Meanwhile members get the "temporarily
    /// unavailable" page (JSON for API callers), never an error of another kind or a hang, and `/readyz` fails; then
    /// both replicas serve the session and its jar again by themselves, and listen for invalidations again.
    @Test func postgresRestartedUnderLoadComesBackWithNothingLost() async throws {
        try await TestPostgres.OwnServer.with { server in
            try await Self.withReplicas(url: server.url) { first, second in
                for replica in [first, second] { #expect(try await Self.timeUntil { replica.built.stateCache.isTrusted } != nil) }
                let cookies = try await ProxyTests.signedIn(first)
                _ = try await first.get("/apps/echo/set-cookie?c=app%3D1%3B%20Path%3D%2F", cookies: cookies)
                let load = Task {
                    var statuses: [Int: Int] = [:]
                    while !Task.isCancelled {
                        for replica in [first, second] {
                            if let status = try? await replica.get("/", cookies: cookies).status { statuses[status, default: 0] += 1 }
                        }
                    }
                    return statuses
                }
                defer { load.cancel() }
                try await Task.sleep(for: .milliseconds(300))
                try await server.stop()

                // Within the cache's bound the replicas stop trusting it; from then on the store is asked, and fails.
                // Each replica on its own time (each listener notices within the bound).
                for replica in [first, second] {
                    #expect(try await Self.timeUntil(limit: .seconds(15)) { try await replica.get("/", cookies: cookies).status == 503 } != nil)
                }
                let page = try await second.get("/", cookies: cookies)
                #expect(page.status == 503 && page.body.contains("Temporarily unavailable") && page.headers.first(name: "Retry-After") == "5")
                let json = try await first.get("/", cookies: cookies, headers: [("Accept", "application/json")])
                #expect(json.status == 503 && json.body.contains("\"error\":\"storage_unavailable\""), "\(json.status) \(json.body)")
                #expect(try await first.get("/readyz", cookies: [:]).status == 503)
                // The operators see the outage as unavailable queries, not as refused statements.
                let outage = MetricsTests.samples(first.built.metrics.exposition())
                #expect(outage[#"gatehouse_db_query_errors_total{kind="unavailable"}"#] ?? 0 > 0)
                #expect(outage[#"gatehouse_db_query_errors_total{kind="query"}"#] == 0)

                try await server.start()
                let back = try await Self.timeUntil(limit: .seconds(30)) {
                    let ready = try await first.get("/readyz", cookies: [:]).status
                    let served = try await second.get("/", cookies: cookies).status
                    return ready == 200 && served == 200
                }
                #expect(back != nil)
                load.cancel()
                let statuses = await load.value
                #expect(Set(statuses.keys).isSubset(of: [200, 503]), "\(statuses)")
                #expect(statuses[200, default: 0] > 0 && statuses[503, default: 0] > 0, "\(statuses)")
                // Nothing lost: the session on both replicas, and its jar.
                #expect(try await first.get("/", cookies: cookies).status == 200)
                #expect(try ProxyTests.report(try await second.get("/apps/echo/echo/x", cookies: cookies)).headers["cookie"] == ["app=1"])
                // Listening again: a sign-out on one replica reaches the other within the bound.
                for replica in [first, second] {
                    #expect(try await Self.timeUntil(limit: .seconds(20)) { replica.built.stateCache.isTrusted } != nil)
                }
                let portal = try await first.get("/", cookies: cookies)
                let csrf = try #require(portal.body.firstMatch(of: /name="csrf" value="([^"]+)"/)?.1)
                _ = try await first.post("/signout", form: [("csrf", String(csrf))], cookies: cookies)
                #expect(Self.within(try await Self.timeUntil { try await second.get("/", cookies: cookies).location == "/signin" }, .seconds(1)))
            }
        }
    }

    /// The listening connections are cut (PostgreSQL ends their processes): each replica empties and bypasses its
    /// cache and listens on a new connection; a sign-out on one replica is refused by the other within a second all
    /// the same.
    @Test func whenInvalidationsAreCutTheReplicasListenAgainAndMissNothing() async throws {
        try await Self.withReplicas { first, second in
            for replica in [first, second] { #expect(try await Self.timeUntil { replica.built.stateCache.isTrusted } != nil) }
            let cookies = try await ProxyTests.signedIn(first)
            #expect(try await second.get("/", cookies: cookies).status == 200)
            let cut = try await Self.listeningProcesses(first.configuration, count: 2)
            #expect(cut.count == 2)
            try await Self.terminate(cut, configuration: first.configuration)
            // Both replicas listen again on new connections (how soon depends on the machine's load; the bound that
            // matters is the sign-out below).
            let replaced = try await Self.timeUntil(limit: .seconds(15)) {
                let now = try await Self.listeningProcesses(first.configuration, count: 2)
                return now.count == 2 && Set(now).isDisjoint(with: cut)
            }
            #expect(replaced != nil)

            let portal = try await first.get("/", cookies: cookies)
            let csrf = try #require(portal.body.firstMatch(of: /name="csrf" value="([^"]+)"/)?.1)
            _ = try await first.post("/signout", form: [("csrf", String(csrf))], cookies: cookies)
            let refused = try await Self.timeUntil { try await second.get("/", cookies: cookies).location == "/signin" }
            #expect(Self.within(refused, .seconds(1)))
            #expect(second.built.stateCache.isTrusted)
        }
    }

    /// The listening connection falls silent (a network that drops everything, the TCP connection still up): the
    /// late heartbeat makes the replica stop trusting its cache within 750 ms, and it listens again on a new one.
    @Test func aSilentListeningConnectionStopsTheCacheBeingTrustedWithinTheBound() async throws {
        let url = try await TestPostgres.freshDatabase()
        let server = try #require(URLComponents(string: url))
        let proxy = try await FreezableProxy(to: try SocketAddress(ipAddress: "127.0.0.1", port: try #require(server.port)))
        var proxied = server
        proxied.port = proxy.port
        let proxiedURL = try #require(proxied.string)
        let storage = StorageConfiguration.postgres(proxiedURL)
        try await LiveGateway.run(configure: { $0.storage = storage }) { gateway in
            try await Self.freezeListening(of: gateway.built.stateCache, through: proxy)
        }
        await proxy.close()
    }

    static func freezeListening(of cache: StateCache, through proxy: FreezableProxy) async throws {
        #expect(try await timeUntil { cache.isTrusted } != nil)
        let bypassesBefore = cache.statistics.bypasses
        let frozen = ContinuousClock.now
        proxy.freeze()
        let noticed = try await timeUntil { cache.statistics.bypasses > bypassesBefore }
        #expect(Self.within(noticed, .seconds(1)))
        // It was the heartbeat that noticed, not a closed socket.
        let waited = ContinuousClock.now - frozen
        #expect(waited > .milliseconds(400))
        // Listening starts again by itself once the pool hands out a connection that works (each frozen one the
        // listener tries is closed after its late heartbeat).
        #expect(try await timeUntil(limit: .seconds(20)) { cache.isTrusted } != nil)
    }

    static func terminate(_ processes: [Int32], configuration: GatehouseConfiguration) async throws {
        let database = try TestPostgres.connect(try #require(configuration.storage.postgresURL))
        try await whileRunning(database) {
            for pid in processes { try await database.query("SELECT pg_terminate_backend(\(pid))") }
        }
    }

    /// The PostgreSQL processes serving the replicas' listening connections (found by their heartbeat).
    static func listeningProcesses(_ configuration: GatehouseConfiguration, count: Int) async throws -> [Int32] {
        let database = try TestPostgres.connect(try #require(configuration.storage.postgresURL))
        return try await whileRunning(database) {
            _ = try await timeUntil { try await database.query(heartbeatQuery).count >= count }
            return try await database.query(heartbeatQuery).map { try $0.decode(Int32.self) }
        }
    }

    static let heartbeatQuery: PostgresQuery =
        "SELECT pid FROM pg_stat_activity WHERE query = 'SELECT ''gatehouse heartbeat''' AND datname = current_database()"
}
