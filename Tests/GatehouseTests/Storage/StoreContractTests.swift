import Foundation
import GatehouseCore
import GatehouseStorage
import Testing

@testable import Gatehouse

/// What every store backend promises the gateway, run against each: single-use sign-in states and handoff codes
/// under concurrency, jars and grants ending with their session, expiry, and event counts.
@Suite struct StoreContractTests {
    static func attempt(_ state: String, at date: Date = Date()) -> LoginAttempt {
        LoginAttempt(state: state, browserBindingHash: "b", nonce: "n", codeVerifier: "v", returnTo: "/", createdAt: date)
    }

    @Test(arguments: StoreBackend.allCases) func aSignInStateIsTakenOnceWhateverTheConcurrency(backend: StoreBackend) async throws {
        try await backend.withStores { stores in
            try await stores.attempts.insert(Self.attempt("state-1"))
            let taken = try await withThrowingTaskGroup(of: LoginAttempt?.self) { group in
                for _ in 0..<50 { group.addTask { try await stores.attempts.take(state: "state-1") } }
                return try await group.reduce(into: [LoginAttempt]()) { if let attempt = $1 { $0.append(attempt) } }
            }
            #expect(taken.count == 1)
            #expect(taken.first?.state == "state-1")
            try await stores.attempts.insert(Self.attempt("old", at: Date().addingTimeInterval(-3600)))
            #expect(try await stores.attempts.deleteOlder(than: Date().addingTimeInterval(-600)) == 1)
            #expect(try await stores.attempts.take(state: "old") == nil)
        }
    }

    /// Back-channel logout: a provider session ends its gateway sessions (and only the named member's), a member
    /// without `sid` ends all of theirs; a logout token is honoured once until it could no longer be presented.
    @Test(arguments: StoreBackend.allCases) func providerSessionsEndAndLogoutTokensWorkOnce(backend: StoreBackend) async throws {
        try await backend.withStores { stores in
            for (cookie, sub, sid) in [
                ("a1", "ada", "sid-1"), ("a2", "ada", "sid-1"), ("a3", "ada", "sid-2"), ("b1", "bob", "sid-3"), ("b2", "bob", nil),
            ] {
                try await stores.sessions.insert(SessionLifecycleTests.session(cookie: cookie, sub: sub, providerSession: sid))
            }
            let id = { SessionResolver.sessionID(forCookie: $0) }
            #expect(try await stores.sessions.find(id: id("a1"))?.providerSessionID == "sid-1")
            // A sid with somebody else's sub ends nothing.
            #expect(try await stores.sessions.deleteProviderSessions(subject: "bob", providerSessionID: "sid-1").isEmpty)
            let bySid = try await stores.sessions.deleteProviderSessions(subject: "ada", providerSessionID: "sid-1")
            #expect(Set(bySid.map(\.id)) == [id("a1"), id("a2")] && bySid.allSatisfy { $0.identity.sub == "ada" })
            #expect(try await stores.sessions.find(id: id("a3")) != nil)
            #expect(try await stores.sessions.deleteProviderSessions(subject: nil, providerSessionID: "sid-2").map(\.id) == [id("a3")])
            #expect(Set(try await stores.sessions.deleteProviderSessions(subject: "bob", providerSessionID: nil).map(\.id)) == [id("b1"), id("b2")])
            #expect(try await stores.sessions.deleteProviderSessions(subject: nil, providerSessionID: nil).isEmpty)

            let until = Date().addingTimeInterval(60)
            let remembered = try await withThrowingTaskGroup(of: Bool.self) { group in
                for _ in 0..<20 { group.addTask { try await stores.logoutTokens.remember(issuer: "https://idp", tokenID: "j1", until: until) } }
                return try await group.reduce(into: 0) { $0 += $1 ? 1 : 0 }
            }
            #expect(remembered == 1)
            #expect(try await stores.logoutTokens.remember(issuer: "https://other-idp", tokenID: "j1", until: until))
            try await stores.logoutTokens.forget(issuer: "https://idp", tokenID: "j1")
            #expect(try await stores.logoutTokens.remember(issuer: "https://idp", tokenID: "j1", until: until))
            #expect(try await stores.logoutTokens.remember(issuer: "https://idp", tokenID: "old", until: Date().addingTimeInterval(-1)))
            #expect(try await stores.logoutTokens.deleteExpired(now: Date()) == 1)
        }
    }

    /// A member's live sessions, newest activity first, with the device they signed in from: not another member's,
    /// not an expired or idle one.
    @Test(arguments: StoreBackend.allCases) func aMembersLiveSessionsAreListed(backend: StoreBackend) async throws {
        try await backend.withStores { stores in
            let now = Date()
            var phone = SessionLifecycleTests.session(cookie: "phone", sub: "ann", lastSeen: now.addingTimeInterval(-60))
            phone.device = SessionDevice(userAgent: "Firefox/128.0 (Android 14)", address: "203.0.113.7")
            let laptop = SessionLifecycleTests.session(cookie: "laptop", sub: "ann", lastSeen: now)
            let idle = SessionLifecycleTests.session(cookie: "idle", sub: "ann", lastSeen: now.addingTimeInterval(-7200))
            let expired = SessionLifecycleTests.session(cookie: "expired", sub: "ann", expiresIn: -1)
            let other = SessionLifecycleTests.session(cookie: "other", sub: "bob")
            for session in [phone, laptop, idle, expired, other] { try await stores.sessions.insert(session) }
            let listed = try await stores.sessions.sessions(subject: "ann", now: now, idleCutoff: now.addingTimeInterval(-3600))
            #expect(listed.map(\.id) == [laptop.id, phone.id])
            var registered = SessionLifecycleTests.session(cookie: "registered", sub: "cy")
            registered.level = .registered
            try await stores.sessions.insert(registered)
            let levels = try await stores.sessions.levels(now: now, idleCutoff: now.addingTimeInterval(-3600))
            #expect(levels["sso"]?.sessions == 3 && levels["sso"]?.members == 2 && levels["registered"]?.members == 1)
            #expect(listed.last?.device == phone.device && listed.last?.device?.summary.browser == "Firefox")
            // Ended from the laptop: gone from the list and the store, remembered as ended until its own expiry.
            try await stores.sessions.end(id: phone.id, until: phone.expiresAt)
            let remaining = try await stores.sessions.sessions(subject: "ann", now: now, idleCutoff: now.addingTimeInterval(-3600))
            #expect(remaining.map(\.id) == [laptop.id])
            let gone = try await stores.sessions.find(id: phone.id)
            #expect(gone == nil)
            #expect(try await stores.sessions.ended(id: phone.id, now: now) == EndedSession(timedOutMember: nil))
            #expect(try await stores.sessions.ended(id: laptop.id, now: now) == nil)
            _ = try await stores.sessions.deleteExpired(now: phone.expiresAt.addingTimeInterval(1), idleCutoff: .distantPast)
            #expect(try await stores.sessions.ended(id: phone.id, now: now) == nil)
            // Run out of time: remembered with its member.
            try await stores.sessions.end(id: laptop.id, until: now.addingTimeInterval(60), timedOutMember: "ann")
            #expect(try await stores.sessions.ended(id: laptop.id, now: now) == EndedSession(timedOutMember: "ann"))
        }
    }

    @Test(arguments: StoreBackend.allCases) func sessionsUpdateExpireAndTakeTheirJarsAndGrantsWithThem(backend: StoreBackend) async throws {
        try await backend.withStores { stores in
            var session = SessionLifecycleTests.session(cookie: "c1")
            try await stores.sessions.insert(session)
            await #expect(throws: (any Error).self) { try await stores.sessions.insert(session) }  // ids are unique
            session.tokens.accessToken = "access-9"
            session.lastSeenAt = Date().addingTimeInterval(1)
            try await stores.sessions.update(session)
            let found = try #require(try await stores.sessions.find(id: session.id))
            #expect(found.tokens.accessToken == "access-9")
            #expect(abs(found.lastSeenAt.timeIntervalSince(session.lastSeenAt)) < 0.001)

            let origin = try #require(CookieOrigin(url: URL(string: "https://wiki.example.org/")!))
            try await stores.jars.modify(sessionID: session.id) { $0.store(setCookie: "app=1; Path=/", from: origin) }
            // Times go through JSON as seconds since 1970, so compare what a request reads from the jar.
            let loaded = try #require(try await stores.jars.load(sessionID: session.id))
            #expect(loaded.cookies.map { "\($0.name)=\($0.value) \($0.domain)\($0.path)" } == ["app=1 wiki.example.org/"])
            try await stores.hostMounts.insertGrant(tokenHash: "grant-1", sessionID: session.id, slug: "wiki")
            #expect(try await stores.hostMounts.sessionID(grantTokenHash: "grant-1", slug: "wiki") == session.id)
            #expect(try await stores.hostMounts.sessionID(grantTokenHash: "grant-1", slug: "other") == nil)

            try await stores.sessions.insert(SessionLifecycleTests.session(cookie: "idle", lastSeen: Date().addingTimeInterval(-7200)))
            try await stores.sessions.insert(SessionLifecycleTests.session(cookie: "ended", expiresIn: -1))
            // Live: only the first; the idle and the ended ones are not counted (and the gauges show the same).
            #expect(try await stores.sessions.countActive(now: Date(), idleCutoff: Date().addingTimeInterval(-3600)) == 1)
            let metrics = GatewayMetrics()
            await StoreGauges(
                prepared: stores.prepare, sessions: stores.sessions, registrations: stores.registrations,
                session: SessionConfiguration(idleTimeoutSeconds: 3600),
                maximumProvisioningAttempts: 8, metrics: metrics, logger: SessionLifecycleTests.logger
            ).read()
            let samples = MetricsTests.samples(metrics.exposition())
            #expect(samples["gatehouse_active_sessions"] == 1 && samples["gatehouse_provisioning_waiting"] == 0)
            let removed = try await stores.sessions.deleteExpired(now: Date(), idleCutoff: Date().addingTimeInterval(-3600))
            #expect(Set(removed) == [SessionResolver.sessionID(forCookie: "idle"), SessionResolver.sessionID(forCookie: "ended")])
            #expect(try await stores.sessions.find(id: session.id) != nil)

            try await stores.sessions.delete(id: session.id)
            #expect(try await stores.sessions.find(id: session.id) == nil)
            #expect(try await stores.jars.load(sessionID: session.id) == nil)
            #expect(try await stores.hostMounts.sessionID(grantTokenHash: "grant-1", slug: "wiki") == nil)
        }
    }

    @Test(arguments: StoreBackend.allCases) func frameChoicesMergeAndOutliveUpdatesOfOlderCopies(backend: StoreBackend) async throws {
        try await backend.withStores { stores in
            let session = SessionLifecycleTests.session(cookie: "f1")
            try await stores.sessions.insert(session)
            try await stores.sessions.setFrame(FramePreferences(barCollapsed: true), sessionID: session.id)
            try await stores.sessions.setFrame(FramePreferences(bannerDismissed: true), sessionID: session.id)
            #expect(try await stores.sessions.find(id: session.id)?.frame == FramePreferences(barCollapsed: true, bannerDismissed: true))
            // A touch or a token refresh working on the copy read before the choices keeps them.
            var stale = session
            stale.tokens.accessToken = "access-2"
            try await stores.sessions.update(stale)
            let found = try #require(try await stores.sessions.find(id: session.id))
            #expect(found.tokens.accessToken == "access-2")
            #expect(found.frame == FramePreferences(barCollapsed: true, bannerDismissed: true))
            try await stores.sessions.setFrame(FramePreferences(barCollapsed: false), sessionID: session.id)
            #expect(try await stores.sessions.find(id: session.id)?.frame == FramePreferences(barCollapsed: false, bannerDismissed: true))
            // A session that never made a choice has none, and an update gives it none.
            let other = SessionLifecycleTests.session(cookie: "f2")
            try await stores.sessions.insert(other)
            try await stores.sessions.update(other)
            #expect(try await stores.sessions.find(id: other.id)?.frame == nil)
        }
    }

    /// A step-up's proof is written by itself: an update from a copy read before it (a touch, a refresh) keeps it.
    @Test(arguments: StoreBackend.allCases) func whatTheMemberProvedOutlivesOlderCopies(backend: StoreBackend) async throws {
        try await backend.withStores { stores in
            var session = SessionLifecycleTests.session(cookie: "a1")
            let signIn = Date(timeIntervalSince1970: 1_800_000_000)
            session.assurance = Assurance(authenticatedAt: signIn, acr: "silver")
            try await stores.sessions.insert(session)
            #expect(try await stores.sessions.find(id: session.id)?.assurance == session.assurance)
            let stepUp = Assurance(authenticatedAt: signIn + 3600, acr: "gold", pinVerifiedAt: signIn + 3601)
            try await stores.sessions.setAssurance(stepUp, sessionID: session.id)
            var stale = session
            stale.tokens.accessToken = "access-2"
            stale.lastSeenAt = Date()
            try await stores.sessions.update(stale)
            let found = try #require(try await stores.sessions.find(id: session.id))
            #expect(found.tokens.accessToken == "access-2" && found.assurance == stepUp)
            // A session stored before assurances were kept has none, and an update gives it none.
            let other = SessionLifecycleTests.session(cookie: "a2")
            try await stores.sessions.insert(other)
            try await stores.sessions.update(other)
            #expect(try await stores.sessions.find(id: other.id)?.assurance == nil)
        }
    }

    @Test(arguments: StoreBackend.allCases) func aHandoffCodeWorksOnce(backend: StoreBackend) async throws {
        try await backend.withStores { stores in
            let session = SessionLifecycleTests.session(cookie: "c1")
            try await stores.sessions.insert(session)
            let handoff = AppHandoff(
                codeHash: "code-1", sessionID: session.id, slug: "wiki", stateHash: "s", returnTo: "/", expiresAt: Date().addingTimeInterval(60))
            try await stores.hostMounts.insert(handoff)
            let taken = try await withThrowingTaskGroup(of: AppHandoff?.self) { group in
                for _ in 0..<50 { group.addTask { try await stores.hostMounts.takeHandoff(codeHash: "code-1") } }
                return try await group.reduce(into: [AppHandoff]()) { if let handoff = $1 { $0.append(handoff) } }
            }
            #expect(taken.map(\.codeHash) == ["code-1"] && taken.first?.sessionID == session.id)
            var expired = handoff
            expired.codeHash = "code-2"
            expired.expiresAt = Date().addingTimeInterval(-1)
            try await stores.hostMounts.insert(expired)
            #expect(try await stores.hostMounts.deleteExpiredHandoffs(now: Date()) == 1)
        }
    }

    @Test(arguments: StoreBackend.allCases) func eventsAreCountedPerNameAndMember(backend: StoreBackend) async throws {
        try await backend.withStores { stores in
            let start = Date().addingTimeInterval(-60)
            let batch = [(EventName.ssoLoginSuccess, "a"), (.ssoLoginSuccess, "a"), (.ssoLoginSuccess, "b"), (.ssoLogout, nil)].map {
                GatewayEvent(name: $0, sub: $1, detail: "d")
            }
            try await stores.events.append(batch)
            try await stores.events.append([GatewayEvent(name: .ssoLogout, at: start.addingTimeInterval(-60))])
            try await stores.events.append([])
            let counts = try await stores.events.counts(in: DateInterval(start: start, end: Date().addingTimeInterval(1)))
            #expect(counts[.ssoLoginSuccess] == EventCount(events: 3, members: 2))
            #expect(counts[.ssoLogout] == EventCount(events: 1, members: 0))
            let recent = try await stores.events.events(since: start)
            #expect(recent.map(\.name) == [.ssoLoginSuccess, .ssoLoginSuccess, .ssoLoginSuccess, .ssoLogout])
            #expect(recent.first?.detail == "d")
        }
    }

    @Test(arguments: StoreBackend.allCases) func auditRecordsAreFilteredNewestFirstAndRemovedAfterTheirRetention(backend: StoreBackend) async throws {
        try await backend.withStores { stores in
            let now = Date()
            let yesterday = now.addingTimeInterval(-86_400)
            try await stores.audit.append([
                AuditRecord(action: .appOpened, member: "a", app: "wiki", path: "/page?token=secret", at: yesterday),
                AuditRecord(action: .refused, member: "a", app: "hr", path: "/payroll", reason: "app_not_allowed:hr", detail: "status 403"),
                AuditRecord(action: .appOpened, member: "b", app: "wiki", path: "/"),
                AuditRecord(action: .operatorChange, reason: "configuration_reloaded", detail: "apps added: hr"),
            ])
            try await stores.audit.append([])
            let all = try await stores.audit.records(AuditQuery())
            #expect(all.map(\.action) == [.operatorChange, .appOpened, .refused, .appOpened])
            #expect(all.last?.path == "/page", "a query never reaches the trail")
            #expect(try await stores.audit.records(AuditQuery(member: "a")).map(\.app) == ["hr", "wiki"])
            #expect(try await stores.audit.records(AuditQuery(app: "wiki", day: now)).map(\.member) == ["b"])
            #expect(try await stores.audit.records(AuditQuery(action: .refused)).first?.reason == "app_not_allowed:hr")
            #expect(try await stores.audit.records(AuditQuery(limit: 2)).count == 2)
            #expect(try await stores.audit.removeRecords(before: now.addingTimeInterval(-3600)) == 1)
            #expect(try await stores.audit.records(AuditQuery(member: "a")).map(\.app) == ["hr"])
        }
    }

    /// The console's apps: every write at the version the operator saw, so that nobody's change is silently undone.
    @Test(arguments: StoreBackend.allCases) func catalogWritesOnlyAtTheVersionTheOperatorSaw(backend: StoreBackend) async throws {
        try await backend.withStores { stores in
            let wiki = StoredApp(slug: "wiki", entry: #"{"name":"Wiki"}"#, enabled: true, changedBy: "olive")
            let added = try #require(try await stores.catalog.save(wiki, expectedVersion: nil))
            #expect(added.version == 1 && added.changedBy == "olive")
            #expect(try await stores.catalog.save(wiki, expectedVersion: nil) == nil, "a second app under the same slug")
            _ = try await stores.catalog.save(StoredApp(slug: "hr", entry: "{}", enabled: false, changedBy: "oscar"), expectedVersion: nil)
            var edited = wiki
            edited.entry = #"{"name":"Team Wiki"}"#
            edited.changedBy = "oscar"
            let saved = try #require(try await stores.catalog.save(edited, expectedVersion: 1))
            #expect(saved.version == 2 && saved.entry == edited.entry && saved.changedBy == "oscar")
            #expect(try await stores.catalog.save(wiki, expectedVersion: 1) == nil, "an edit from a stale page")
            #expect(try await !stores.catalog.remove("wiki", expectedVersion: 1))
            #expect(try await stores.catalog.apps().map(\.slug) == ["wiki", "hr"])
            #expect(try await stores.catalog.app("hr")?.enabled == false)
            #expect(try await stores.catalog.remove("wiki", expectedVersion: 2))
            #expect(try await stores.catalog.app("wiki") == nil)
            #expect(try await stores.catalog.save(edited, expectedVersion: 2) == nil, "an edit of a removed app")
        }
    }

    /// Forty responses setting forty cookies at once for one member: every cookie is kept.
    @Test(arguments: StoreBackend.allCases) func parallelCookieChangesAreAllKept(backend: StoreBackend) async throws {
        try await backend.withStores { stores in
            let session = SessionLifecycleTests.session(cookie: "c1")
            try await stores.sessions.insert(session)
            let jars = SharedCookieJars(store: stores.jars)
            let origin = try #require(CookieOrigin(url: URL(string: "https://wiki.example.org/")!))
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<40 {
                    group.addTask { try await jars.absorb(setCookies: ["c\(index)=\(index); Path=/"], from: origin, sessionID: session.id) }
                }
                try await group.waitForAll()
            }
            #expect(try await stores.jars.load(sessionID: session.id)?.cookies.count == 40)
        }
    }

    /// A browser's push subscription is kept with its session's device, sealed, found by its key's hash alone, and
    /// gone with the device; one for a device no longer held is not kept.
    @Test(arguments: StoreBackend.allCases) func aPushSubscriptionLivesAndEndsWithItsDevice(backend: StoreBackend) async throws {
        try await backend.withStores { stores in
            let device = StoredMatrixDevice(
                sessionID: "s1", sub: "ann", userID: "@ann:chat.test", deviceID: "D1", accessToken: "token", createdAt: Date(timeIntervalSince1970: 1_000))
            #expect(try await stores.matrixDevices.insert(device))
            let subscription = WebPush.Subscription(endpoint: "https://push.example/1", p256dh: Data(repeating: 4, count: 65), auth: Data(count: 16))
            let push = StoredPush(keyHash: "hash-1", subscription: subscription, previews: true, language: "de")
            #expect(try await !stores.matrixDevices.setPush(sessionID: "s1", deviceID: "D0", push))
            #expect(try await stores.matrixDevices.setPush(sessionID: "s1", deviceID: "D1", push))
            #expect(try await stores.matrixDevices.device(pushKeyHash: "hash-1")?.push == push)
            #expect(try await stores.matrixDevices.device(sessionID: "s1")?.push == push)
            #expect(try await stores.matrixDevices.device(pushKeyHash: "hash-2") == nil)
            #expect(try await stores.matrixDevices.setPush(sessionID: "s1", deviceID: "D1", nil))
            #expect(try await stores.matrixDevices.device(pushKeyHash: "hash-1") == nil)
            #expect(try await stores.matrixDevices.device(sessionID: "s1")?.push == nil)
            _ = try await stores.matrixDevices.setPush(sessionID: "s1", deviceID: "D1", push)
            try await stores.matrixDevices.delete(sessionID: "s1", deviceID: "D1")
            #expect(try await stores.matrixDevices.device(pushKeyHash: "hash-1") == nil)
        }
    }
}
