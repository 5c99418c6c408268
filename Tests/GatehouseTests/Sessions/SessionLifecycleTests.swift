import Foundation
import GatehouseCore
import Logging
import Testing

@testable import Gatehouse
@testable import GatehouseStorage

@Suite struct SessionLifecycleTests {
    static let logger = Logger(label: "test")

    struct Harness {
        let stores: Stores
        let queue: EventQueue
        var sessions: any SessionStore { stores.sessions }
        var recorder: EventRecorder { EventRecorder(queue: queue, logger: SessionLifecycleTests.logger) }

        /// Runs `body` with a harness on fresh stores of `backend` (and their event queue running).
        static func with(_ backend: StoreBackend, _ body: (Harness) async throws -> Void) async throws {
            try await backend.withStores { stores in
                let queue = EventQueue(store: stores.events, logger: SessionLifecycleTests.logger)
                try await whileRunning(queue) { try await body(Harness(stores: stores, queue: queue)) }
            }
        }

        /// Every event recorded so far, once stored.
        func storedEvents() async throws -> [GatewayEvent] {
            #expect(await queue.flush())
            return try await stores.events.events(since: .distantPast)
        }

        func resolver(window: Int = 300, idle: Int = 1800, refresh: @escaping TokenRefresher.Refresh) -> SessionResolver {
            let refresher = TokenRefresher(store: sessions, window: TimeInterval(window), refresh: refresh)
            return SessionResolver(
                store: sessions, refresher: refresher, events: recorder,
                configuration: SessionConfiguration(idleTimeoutSeconds: idle, absoluteTimeoutSeconds: 7200), logger: SessionLifecycleTests.logger
            )
        }
    }

    static func session(
        cookie: String, sub: String? = nil, providerSession: String? = nil, expiresIn: TimeInterval = 3600, tokenExpiresIn: TimeInterval = 3600,
        lastSeen: Date = Date()
    ) -> Session {
        Session(
            id: SessionResolver.sessionID(forCookie: cookie), identity: MemberIdentity(sub: sub ?? "member-\(cookie)", name: "M"),
            tokens: TokenSet(
                idToken: "id", accessToken: "access-0", refreshToken: "refresh-0", accessTokenExpiresAt: Date().addingTimeInterval(tokenExpiresIn)),
            level: .sso, csrfToken: "csrf", createdAt: Date(), lastSeenAt: lastSeen, expiresAt: Date().addingTimeInterval(expiresIn),
            providerSessionID: providerSession
        )
    }

    @Test func sessionsSurviveReopeningTheDatabase() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-\(UUID().uuidString).sqlite").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try await Stores.sqlite(SQLiteDatabase.open(path: path, logger: Self.logger), keyring: .forTests).whileRunning { stores in
            try await stores.sessions.insert(Self.session(cookie: "c1"))
        }
        try await Stores.sqlite(SQLiteDatabase.open(path: path, logger: Self.logger), keyring: .forTests).whileRunning { stores in
            let found = try await stores.sessions.find(id: SessionResolver.sessionID(forCookie: "c1"))
            #expect(found?.identity.sub == "member-c1")
        }
    }

    @Test(arguments: StoreBackend.allCases) func idleAndAbsoluteExpiryEndTheSession(backend: StoreBackend) async throws {
        try await Harness.with(backend) { harness in
            try await harness.sessions.insert(Self.session(cookie: "idle", lastSeen: Date().addingTimeInterval(-3600)))
            try await harness.sessions.insert(Self.session(cookie: "old", expiresIn: -1))
            let resolver = harness.resolver { _, _ throws(OIDCError) in throw .refreshFailed("unused") }
            #expect(try await resolver.resolve(cookie: "idle") == .expired(timedOutFor: "member-idle"))
            #expect(try await resolver.resolve(cookie: "old") == .expired(timedOutFor: "member-old"))
            // Gone, and remembered a while as run out of time (a form the member sends next may wait for them).
            #expect(try await resolver.resolve(cookie: "idle") == .expired(timedOutFor: "member-idle"))
            #expect(try await harness.sessions.find(id: SessionResolver.sessionID(forCookie: "idle")) == nil)
            #expect(try await resolver.resolve(cookie: "never-issued") == .none)
            let logouts = try await harness.storedEvents().filter { $0.name == .ssoLogout }
            #expect(Set(logouts.compactMap(\.detail)) == ["idle_timeout", "absolute_timeout"])
        }
    }

    /// Ten parallel requests, one refresh: the single-use refresh token is spent exactly once.
    @Test(arguments: StoreBackend.allCases) func parallelRequestsShareOneRefresh(backend: StoreBackend) async throws {
        try await Harness.with(backend) { harness in
            try await harness.sessions.insert(Self.session(cookie: "busy", tokenExpiresIn: 60))
            let calls = Counter()
            let resolver = harness.resolver { _, refreshToken throws(OIDCError) in
                let count = await calls.increment()
                guard refreshToken == "refresh-0" else { throw .refreshFailed("refresh token reused") }
                try? await Task.sleep(for: .milliseconds(100))
                return TokenResponse(
                    accessToken: "access-\(count)", idToken: nil, refreshToken: "refresh-\(count)", expiresIn: 3600, tokenType: "Bearer")
            }
            let results = try await withThrowingTaskGroup(of: SessionResolver.Resolution.self) { group in
                for _ in 0..<10 { group.addTask { try await resolver.resolve(cookie: "busy") } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(await calls.value == 1)
            for result in results {
                guard case .active(let session, _) = result else {
                    Issue.record("expected an active session, got \(result)")
                    continue
                }
                #expect(session.tokens.accessToken == "access-1")
            }
            let stored = try await harness.sessions.find(id: SessionResolver.sessionID(forCookie: "busy"))
            #expect(stored?.tokens.refreshToken == "refresh-1")
        }
    }

    @Test(arguments: StoreBackend.allCases) func aRefusedRefreshEndsTheSession(backend: StoreBackend) async throws {
        try await Harness.with(backend) { harness in
            try await harness.sessions.insert(Self.session(cookie: "revoked", tokenExpiresIn: 10))
            let resolver = harness.resolver { _, _ throws(OIDCError) in throw .refreshFailed("invalid_grant") }
            #expect(try await resolver.resolve(cookie: "revoked") == .expired(timedOutFor: nil))
            #expect(try await harness.sessions.find(id: SessionResolver.sessionID(forCookie: "revoked")) == nil)
            let events = try await harness.storedEvents()
            #expect(events.contains { $0.name == .ssoLogout && $0.detail == "refresh_failed" })
        }
    }

    /// The provider down (refused, or not answering) is not a refusal: the member goes on until the session's own end,
    /// and the refresh is tried again on the next request.
    @Test(arguments: StoreBackend.allCases) func aProviderThatCannotBeAskedPostponesTheRefresh(backend: StoreBackend) async throws {
        try await Harness.with(backend) { harness in
            try await harness.sessions.insert(Self.session(cookie: "waiting", tokenExpiresIn: 10))
            let calls = Counter()
            let resolver = harness.resolver { _, _ throws(OIDCError) in
                throw await calls.increment() == 1 ? .providerUnreachable("connection refused") : .providerNotAnswering("timeouts")
            }
            for _ in 0..<2 {
                guard case .active(let session, _) = try await resolver.resolve(cookie: "waiting") else {
                    Issue.record("the session should go on while the provider is down")
                    return
                }
                #expect(session.tokens.accessToken == "access-0")
            }
            #expect(await calls.value == 2)
            #expect(try await harness.sessions.find(id: SessionResolver.sessionID(forCookie: "waiting")) != nil)
            #expect(try await !harness.storedEvents().contains { $0.name == .ssoLogout })
        }
    }

    @Test(arguments: StoreBackend.allCases) func tokensOutsideTheWindowAreNotRefreshed(backend: StoreBackend) async throws {
        try await Harness.with(backend) { harness in
            try await harness.sessions.insert(Self.session(cookie: "fresh", tokenExpiresIn: 3600))
            let calls = Counter()
            let resolver = harness.resolver { _, _ throws(OIDCError) in
                _ = await calls.increment()
                throw .refreshFailed("should not be called")
            }
            guard case .active = try await resolver.resolve(cookie: "fresh") else {
                Issue.record("expected an active session")
                return
            }
            #expect(await calls.value == 0)
        }
    }

    @Test(arguments: StoreBackend.allCases) func refusedTransitionsAreRecorded(backend: StoreBackend) async throws {
        try await Harness.with(backend) { harness in
            #expect(harness.recorder.transition(.upgradeCompleted, from: .none, sub: "s") == nil)
            let events = try await harness.storedEvents()
            #expect(events.map(\.name) == [.stateInconsistencyDetected])
            #expect(events.first?.detail == "upgradeCompleted from none")
        }
    }
}
