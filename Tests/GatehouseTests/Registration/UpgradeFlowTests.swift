import Foundation
import GatehouseCore
import SQLiteNIO
import Testing

@testable import Gatehouse
@testable import GatehouseStorage

/// The upgrade flow over real sockets: every step's validation and error paths, resume after a restart, the `http`
/// code sender and the provisioning webhook against a real receiver, and the operator's funnel endpoint.
@Suite struct UpgradeFlowTests {
    /// A signed-in member's browser, driving the flow with plain form posts.
    struct Member {
        let gateway: LiveGateway
        var cookies: BrowserCookies

        static func signIn(_ gateway: LiveGateway, as username: String) async throws -> Member {
            let flow = try await SignInFlowTests.signIn(gateway, as: username, deepLink: "/")
            return Member(gateway: gateway, cookies: flow.cookies)
        }

        /// `json`: as the gateway's own scripts ask, for JSON with the page's token (`X-Gatehouse-CSRF`).
        func get(_ path: String, json: Bool = false) async throws -> LiveGateway.Reply {
            let headers = json ? [("Accept", "application/json"), ("X-Gatehouse-CSRF", try await csrf())] : []
            return try await gateway.get(path, cookies: cookies.values, headers: headers)
        }

        func csrf() async throws -> String {
            let page = try await get("/")
            let marker = "name=\"csrf\" value=\""
            let start = try #require(page.body.range(of: marker)).upperBound
            return String(page.body[start...].prefix { $0 != "\"" })
        }

        func post(_ path: String, _ form: [(String, String)], csrf csrfToken: String? = nil, origin: String? = nil) async throws -> LiveGateway.Reply
        {
            let token: String
            if let given = csrfToken { token = given } else { token = try await csrf() }
            return try await gateway.post(
                path, form: [("csrf", token)] + form, cookies: cookies.values, headers: [("Origin", origin ?? gateway.origin)])
        }

        /// The newest code in the development inbox.
        func inboxCode() async throws -> String {
            let inbox = try await get(Paths.developmentInbox).body
            let start = try #require(inbox.range(of: "class=\"code\">")).upperBound
            return String(inbox[start...].prefix(6))
        }

        /// Straight through every step; returns the final reply (the done page's redirect).
        func register(username: String, phone: String = "+15550100001") async throws -> LiveGateway.Reply {
            #expect(try await get("/upgrade?from=portal").location == Paths.upgrade(.phone))
            #expect(try await post(Paths.upgrade(.phone), [("phone", phone)]).location == Paths.upgrade(.code))
            let code = try await inboxCode()
            #expect(try await post(Paths.upgrade(.code), [("code", code)]).location == Paths.upgrade(.username))
            #expect(try await post(Paths.upgrade(.username), [("username", username)]).location == Paths.upgrade(.pin))
            #expect(try await post(Paths.upgrade(.pin), [("pin", "2580"), ("pin_confirmation", "2580")]).location == Paths.upgrade(.profile))
            return try await post(Paths.upgrade(.profile), [("display_name", "Member \(username)"), ("discoverability", "everybody")])
        }
    }

    /// The events the gateway stored (once its queue has written what it holds).
    static func events(_ gateway: LiveGateway) async throws -> [GatewayEvent] {
        #expect(await gateway.built.events.flush())
        let database = try await SQLiteDatabase.open(path: gateway.configuration.storage.sqlitePath, logger: SessionLifecycleTests.logger)
        defer { Task { try? await database.close() } }
        return try await SQLiteEventStore(database: database).events(since: .distantPast)
    }

    static func temporaryDatabase() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-upgrade-\(UUID().uuidString).sqlite").path
    }

    /// A live gateway on a database file of its own (so that the test can read the events too), with a quicker bcrypt.
    static func live<T>(
        path: String = temporaryDatabase(), configure: @escaping (inout GatehouseConfiguration) -> Void = { _ in },
        _ body: (LiveGateway) async throws -> T
    ) async throws -> T {
        try await LiveGateway.run(
            configure: { configuration in
                configuration.storage.sqlitePath = path
                configuration.registration.pinBcryptCost = 10
                configure(&configuration)
            }, body)
    }

    /// `registration.required_roles`: a member without the role is offered nothing (no link on the web apps, no
    /// prompt on the tabs, which say why), and the flow's pages and the username check send them away.
    /// `registration.registered_claim`: a member holding the named role is registered at sign-in without the flow.
    @Test func theUpgradeIsOfferedOnlyToWhomTheOrganizationSays() async throws {
        try await Self.live(configure: { $0.registration.requiredRoles = ["chat-user"] }) { gateway in
            let alice = try await Member.signIn(gateway, as: "alice")
            #expect(try await !alice.get(Paths.portal).body.contains("portal-add-features"))
            let chats = try await alice.get(Paths.chats).body
            #expect(chats.contains("has not enabled chats, calls and stories for your account") && !chats.contains("id=\"add-features\""))
            #expect(try await alice.get("/upgrade?from=portal").location == Paths.chats)
            #expect(try await alice.get(Paths.upgrade(.phone)).location == Paths.chats)
            #expect(try await alice.post(Paths.upgrade(.phone), [("phone", "+15550100001")]).location == Paths.chats)
            #expect(try await alice.get("\(Paths.upgradeUsernameCheck)?username=someone", json: true).status == 403)
        }
        try await Self.live(configure: { $0.registration.enabled = false }) { gateway in
            let alice = try await Member.signIn(gateway, as: "alice")
            #expect(try await alice.get("/upgrade?from=banner").location == Paths.chats)
        }
        try await Self.live(configure: { $0.registration.registeredClaim = "user" }) { gateway in
            let alice = try await Member.signIn(gateway, as: "alice")
            #expect(try await alice.get("/upgrade?from=portal").location == Paths.chats)
            #expect(try await alice.get(Paths.chats).status == 303)  // the chat app opens
        }
        // `features.<tab>.required_roles`/`required_groups`: a feature that is not the member's has no tab, and its
        // address says so instead of opening it, registered or not.
        try await Self.live(configure: { configuration in
            configuration.registration.registeredClaim = "user"
            configuration.features.audiences = [.chats: FeatureAudience(requiredRoles: ["chat-user"]), .stories: FeatureAudience(requiredGroups: ["/staff"])]
        }) { gateway in
            let alice = try await Member.signIn(gateway, as: "alice")  // /staff, no chat-user
            let portal = try await alice.get(Paths.portal).body
            #expect(!portal.contains(#"id="tab-chats""#) && portal.contains(#"id="tab-stories""#) && portal.contains(#"id="tab-calls""#))
            let chats = try await alice.get(Paths.chats)
            #expect(chats.status == 200 && chats.body.contains(#"id="feature-not-offered""#))
            #expect(try await alice.get(Paths.stories).status == 303)
            let bob = try await Member.signIn(gateway, as: "bob")  // /volunteers
            #expect(try await !bob.get(Paths.portal).body.contains(#"id="tab-stories""#))
            #expect(try await bob.get(Paths.stories).body.contains(#"id="feature-not-offered""#))
        }
        #expect(ExistingRegistrations.holds("chat", identity: MemberIdentity(sub: "s"), claims: ["chat": true]))
        #expect(ExistingRegistrations.holds("chat", identity: MemberIdentity(sub: "s"), claims: ["chat": "@s:example.org"]))
        #expect(!ExistingRegistrations.holds("chat", identity: MemberIdentity(sub: "s"), claims: ["chat": false]))
        #expect(!ExistingRegistrations.holds("chat", identity: MemberIdentity(sub: "s"), claims: ["chat": "false"]))
        #expect(!ExistingRegistrations.holds("chat", identity: MemberIdentity(sub: "s"), claims: ["chat": [String]()]))
        #expect(ExistingRegistrations.holds("/chat", identity: MemberIdentity(sub: "s", groups: ["/chat"]), claims: nil))
    }

    @Test func everyStepValidatesOnTheServerAndKeepsWhatWasEntered() async throws {
        let path = Self.temporaryDatabase()
        try await Self.live(path: path) { gateway in
            let alice = try await Member.signIn(gateway, as: "alice")
            // The steps are not reachable before the flow starts.
            #expect(try await alice.get(Paths.upgrade(.username)).location == Paths.upgrade)
            #expect(try await alice.get("/upgrade?from=banner&return_to=%2Fapps%2Flinks%2F").location == Paths.upgrade(.phone))

            // Phone: prefilled from the claim with the note; bad numbers are refused inline with the entry kept (escaped).
            let phone = try await alice.get(Paths.upgrade(.phone))
            // Grouped as every other page shows a number.
            #expect(phone.body.contains("value=\"+1 555 010 0001\"") && phone.body.contains("id=\"phone-from-sso\""))
            let refused = try await alice.post(Paths.upgrade(.phone), [("phone", "<b>555</b>")])
            #expect(refused.status == 422)
            #expect(refused.body.contains("value=\"&lt;b&gt;555&lt;/b&gt;\"") && refused.body.contains("aria-invalid=\"true\""))
            #expect(refused.body.contains("role=\"alert\"") && !refused.body.contains("id=\"phone-from-sso\""))
            #expect(try await alice.post(Paths.upgrade(.phone), [("phone", "5550100001")]).body.contains("country code"))

            // Forms need the session's CSRF token and the gateway's own origin.
            #expect(try await alice.post(Paths.upgrade(.phone), [("phone", "+15550100001")], csrf: "forged").status == 403)
            #expect(try await alice.post(Paths.upgrade(.phone), [("phone", "+15550100001")], origin: "https://evil.example").status == 403)

            #expect(try await alice.post(Paths.upgrade(.phone), [("phone", "+1 555 010 0001")]).location == Paths.upgrade(.code))
            let code = try await alice.inboxCode()
            // A new code only after 60 seconds.
            let early = try await alice.post(Paths.upgradeResend, [])
            #expect(early.status == 422 && early.body.contains("You can ask for a new code in"))
            // Later steps wait for the code.
            #expect(try await alice.get(Paths.upgrade(.pin)).location == Paths.upgrade(.code))
            let wrong = try await alice.post(Paths.upgrade(.code), [("code", code == "000000" ? "111111" : "000000")])
            #expect(wrong.status == 422 && wrong.body.contains("4 tries left"))
            #expect(try await alice.post(Paths.upgrade(.code), [("code", "12")]).body.contains("Enter the 6 digits"))
            // A form over the size any step needs is refused with 413 and the page, not an internal error.
            let huge = try await alice.post(Paths.upgrade(.code), [("code", String(repeating: "1", count: 3 << 20))])
            #expect(huge.status == 413 && huge.body.contains("larger than Gatehouse accepts"))
            #expect(try await alice.post(Paths.upgrade(.code), [("code", code)]).location == Paths.upgrade(.username))
            // The used code is gone: posting it again only points at the current step, saying that the flow had moved on.
            let again = try await alice.post(Paths.upgrade(.code), [("code", code)])
            #expect(again.location == Paths.upgrade(.username) + "?elsewhere=1")
            #expect(try await alice.get(Paths.upgrade(.username) + "?elsewhere=1").body.contains("was not used"))

            // Username: rules, reserved names, and the availability endpoint.
            let reserved = try await alice.post(Paths.upgrade(.username), [("username", "Admin")])
            #expect(reserved.status == 422 && reserved.body.contains("reserved") && reserved.body.contains("value=\"Admin\""))
            let check = try await alice.get(Paths.upgradeUsernameCheck + "?username=1abc", json: true)
            #expect(check.status == 200 && check.body.contains("\"available\":false") && check.body.contains("mustStartWithLetter"))
            #expect(try await alice.get(Paths.upgradeUsernameCheck + "?username=alice.a", json: true).body.contains("\"available\":true"))
            #expect(try await alice.post(Paths.upgrade(.username), [("username", "alice.a")]).location == Paths.upgrade(.pin))

            // PIN: the PIN is never echoed back.
            let mismatch = try await alice.post(Paths.upgrade(.pin), [("pin", "2580"), ("pin_confirmation", "2581")])
            #expect(mismatch.status == 422 && mismatch.body.contains("not the same") && !mismatch.body.contains("2580"))
            #expect(try await alice.post(Paths.upgrade(.pin), [("pin", "1111"), ("pin_confirmation", "1111")]).body.contains("too easy"))
            #expect(try await alice.post(Paths.upgrade(.pin), [("pin", "2580"), ("pin_confirmation", "2580")]).location == Paths.upgrade(.profile))

            // Profile: the name comes from the claim; both fields are checked together.
            #expect(try await alice.get(Paths.upgrade(.profile)).body.contains("value=\"Alice Archer\""))
            let incomplete = try await alice.post(Paths.upgrade(.profile), [("display_name", "  "), ("discoverability", "sometimes")])
            #expect(
                incomplete.status == 422 && incomplete.body.contains("Enter a display name") && incomplete.body.contains("Choose who can find you"))
            // Beside the field too, which says it is wrong and points at the message.
            #expect(incomplete.body.contains(#"<p class="field-error" id="display-name-error">Enter a display name.</p>"#))
            #expect(incomplete.body.contains(#"aria-describedby="display-name-error" aria-invalid="true""#))
            #expect(try await alice.get("/chats").body.contains("id=\"add-features\""))

            let done = try await alice.post(Paths.upgrade(.profile), [("display_name", "Alice A."), ("discoverability", "nobody")])
            #expect(done.location == "/upgrade/done?next=%2Fapps%2Flinks%2F")
            // Registered at once: the chat tabs open their apps, the flow's pages send the member on.
            let donePage = try await alice.get(try #require(done.location))
            #expect(donePage.body.contains("id=\"continue\" href=\"/apps/links/\"") && donePage.body.contains("alice.a"))
            #expect(try await alice.get("/chats").location == "/apps/chat/")
            #expect(try await alice.get("/upgrade?from=chats&return_to=%2Fchats").location == "/chats")
            #expect(try await alice.get(Paths.upgrade(.phone)).location == Paths.chats)
            let calls = try await alice.get("/calls")
            #expect(calls.body.contains("call=audio&amp;camera=off&amp;microphone=on&amp;audio_output=earpiece"))
            #expect(calls.body.contains("call=video&amp;camera=on&amp;microphone=on&amp;audio_output=speaker"))

            let names = try await Self.events(gateway).map(\.name)
            #expect(names.contains(.upgradeBannerTapped) && names.contains(.registrationStarted) && names.contains(.registrationCompleted))
            #expect(!names.contains(.stateInconsistencyDetected) && !names.contains(.registrationFailed))

            // Stored: the PIN as bcrypt, the username for case-insensitive uniqueness.
            let database = try await SQLiteDatabase.open(path: path, logger: SessionLifecycleTests.logger)
            let row = try #require(try await database.query("SELECT sub, username, pin_hash, phone_number, discoverability FROM registrations").first)
            // The phone number sealed for its row, readable through the store only.
            let storedPhone = try #require(row.column("phone_number")?.string)
            #expect(row.column("username")?.string == "alice.a" && storedPhone.hasPrefix("gh1:") && !storedPhone.contains("5550100001"))
            #expect(row.column("pin_hash")?.string?.hasPrefix("$2b$10$") == true && row.column("discoverability")?.string == "nobody")
            let registrations = SQLiteRegistrationStore(database: database, keyring: .forTests)
            #expect(try await registrations.isUsernameTaken("ALICE.A", for: "another", claimsSince: .distantPast))
            #expect(try await registrations.account(sub: try #require(row.column("sub")?.string))?.phoneNumber?.e164 == "+15550100001")
            try await database.close()

            // Another member cannot take the name in another letter case.
            let olive = try await Member.signIn(gateway, as: "olive")
            #expect(try await olive.get("/upgrade?from=portal").location == Paths.upgrade(.phone))
            #expect(try await olive.post(Paths.upgrade(.phone), [("phone", "+15550100003")]).location == Paths.upgrade(.code))
            #expect(try await olive.post(Paths.upgrade(.code), [("code", try await olive.inboxCode())]).location == Paths.upgrade(.username))
            #expect(try await olive.post(Paths.upgrade(.username), [("username", "Alice.A")]).body.contains("taken"))
        }
    }

    @Test func fiveWrongCodesFailTheFlowWithTheToast() async throws {
        try await Self.live { gateway in
            let bob = try await Member.signIn(gateway, as: "bob")
            _ = try await bob.get("/upgrade?from=chats&return_to=%2Fchats")
            let phone = try await bob.get(Paths.upgrade(.phone))
            #expect(phone.body.contains("value=\"\"") && !phone.body.contains("phone-from-sso"))
            #expect(try await bob.post(Paths.upgrade(.phone), [("phone", "+442079460958")]).location == Paths.upgrade(.code))
            let code = try await bob.inboxCode()
            let wrong = code == "000000" ? "111111" : "000000"
            for _ in 0..<4 { #expect(try await bob.post(Paths.upgrade(.code), [("code", wrong)]).status == 422) }
            let failed = try await bob.post(Paths.upgrade(.code), [("code", wrong)])
            #expect(failed.location == "/?toast=registration_failed&reason=code_attempts_exhausted")
            let portal = try await bob.get(try #require(failed.location))
            // The toast says what failed and offers to start again (also without JavaScript).
            #expect(portal.body.contains(#"data-action-url="/upgrade?from=portal&amp;return_to=%2F" data-action-label="Try again">"#))
            #expect(
                portal.body.contains(
                    "Signal registration stopped: the code was entered wrongly five times. Start again to get a new code.</template>"))
            #expect(portal.body.contains(#"<noscript><p class="toast static" role="status">Signal registration stopped"#))
            // An invented reason gets the general text, never the reason itself.
            let invented = try await bob.get("/?toast=registration_failed&reason=%3Cscript%3E")
            #expect(invented.body.contains(">Signal registration failed. Please try again.</template>") && !invented.body.contains("<script>"))
            // The burned code does not work, the member is still `sso`, and the flow starts over.
            #expect(try await bob.post(Paths.upgrade(.code), [("code", code)]).location == Paths.upgrade)
            #expect(try await bob.get("/chats").body.contains("id=\"add-features\""))
            let events = try await Self.events(gateway)
            #expect(events.contains { $0.name == .registrationFailed && $0.detail == "code_attempts_exhausted" })
            let samples = MetricsTests.samples(gateway.built.metrics.exposition())
            #expect(samples[#"gatehouse_registrations_failed_total{reason="code_attempts_exhausted"}"#] == 1)
        }
    }

    /// Cancel forgets the flow, records where the member left it, and lands where they started it (the web apps or a
    /// tab say so in a toast; an app page they came from is simply theirs again).
    /// The walk's findings on the upgrade's and the account's pages: a way back at the top of each (the brand, and
    /// "Finish later" that keeps the steps where Cancel discards them), no `nil` where a value is missing, and the
    /// phone number grouped as everywhere else.
    @Test func everyPageHasAWayBackAndNoMissingValueShows() async throws {
        try await Self.live { gateway in
            let bob = try await Member.signIn(gateway, as: "bob")
            #expect(try await bob.get("/upgrade?from=portal").location == Paths.upgrade(.phone))
            let phone = try await bob.get(Paths.upgrade(.phone)).body
            #expect(phone.contains(#"<a class="brand" href="/" id="brand-home">"#) && phone.contains(#"id="upgrade-later""#))
            let alice = try await Member.signIn(gateway, as: "alice")
            let done = try await alice.register(username: "alice.w")
            #expect(done.location?.hasPrefix(Paths.upgradeDone) == true)
            let pages = [Paths.upgradeDone, Paths.account, Paths.sessions, Paths.portal]
            for path in pages {
                let page = try await alice.get(path)
                #expect(page.status == 200, "\(path)")
                #expect(TemplateRenderingTests.strays(in: page.body) == [], "\(path)")
            }
            let account = try await alice.get(Paths.account).body
            let back = try #require(account.range(of: #"id="topbar-back""#))
            #expect(back.lowerBound < (try #require(account.range(of: #"id="account-title""#))).lowerBound)
            #expect(account.contains(#"<bdi dir="ltr" class="phone-number">+1 555 010 0001</bdi>"#))
        }
    }

    @Test func cancelReturnsWhereTheMemberStartedAndForgetsTheFlow() async throws {
        try await Self.live { gateway in
            let bob = try await Member.signIn(gateway, as: "bob")
            _ = try await bob.get("/upgrade?from=portal&return_to=%2F")
            #expect(try await bob.post(Paths.upgrade(.phone), [("phone", "+442079460958")]).location == Paths.upgrade(.code))
            #expect(try await bob.post(Paths.upgradeCancel, [], csrf: "forged").status == 403)
            let cancelled = try await bob.post(Paths.upgradeCancel, [])
            #expect(cancelled.location == "/?toast=registration_cancelled")
            #expect(try await bob.get(try #require(cancelled.location)).body.contains("registration cancelled. Nothing was saved."))
            #expect(try await bob.get(Paths.upgrade(.code)).location == Paths.upgrade)
            #expect(try await Self.events(gateway).contains { $0.name == .registrationCancelled && $0.detail == "code" })

            _ = try await bob.get("/upgrade?from=chats&return_to=%2Fchats")
            let fromChats = try await bob.post(Paths.upgradeCancel, [])
            #expect(fromChats.location == "/chats?toast=registration_cancelled")
            #expect(try await bob.get(try #require(fromChats.location)).body.contains("registration cancelled"))
            _ = try await bob.get("/upgrade?from=banner&return_to=%2Fapps%2Flinks%2Fabout")
            #expect(try await bob.post(Paths.upgradeCancel, []).location == "/apps/links/about")
        }
    }

    @Test func anInterruptedFlowResumesAfterARestartAndStartsOverAfterThirtyMinutes() async throws {
        let path = Self.temporaryDatabase()
        let member = try await Self.live(path: path) { gateway in
            let alice = try await Member.signIn(gateway, as: "alice")
            _ = try await alice.get("/upgrade?from=portal")
            #expect(try await alice.post(Paths.upgrade(.phone), [("phone", "+15550100001")]).location == Paths.upgrade(.code))
            return alice.cookies
        }
        try await Self.live(path: path) { gateway in
            let alice = Member(gateway: gateway, cookies: member)
            let resumed = try await alice.get("/upgrade?from=banner")
            #expect(resumed.location == Paths.upgrade(.code) + "?resumed=1")
            #expect(try await alice.get(try #require(resumed.location)).body.contains("you are continuing where you left off"))
            #expect(try await Self.events(gateway).contains { $0.name == .registrationResumed && $0.detail == "code" })

            // Thirty-one minutes later: the flow starts over at the phone number.
            let database = try await SQLiteDatabase.open(path: path, logger: SessionLifecycleTests.logger)
            let flows = SQLiteRegistrationFlowStore(database: database, keyring: .forTests)
            let sub = try #require(try await database.query("SELECT sub FROM registration_flows").first?.column("sub")?.string)
            let encoder = JSONEncoder()
            encoder.dateEncodingStrategy = .secondsSince1970
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .secondsSince1970
            let stored = try #require(try await flows.flow(sub: sub))
            var flow = try #require(JSONSerialization.jsonObject(with: encoder.encode(stored)) as? [String: Any])
            flow["updatedAt"] = try #require(flow["updatedAt"] as? Double) - 1860
            try await flows.save(decoder.decode(RegistrationFlow.self, from: JSONSerialization.data(withJSONObject: flow)))
            try await database.close()
            #expect(try await alice.get(Paths.upgrade(.code)).location == Paths.upgrade)
            // It says so, and the number typed before is filled in again.
            let restarted = try await alice.get("/upgrade?from=portal")
            #expect(restarted.location == Paths.upgrade(.phone) + "?restarted=1")
            let page = try await alice.get(try #require(restarted.location)).body
            #expect(page.contains("more than 30 minutes ago") && page.contains("value=\"+1 555 010 0001\""))
            #expect(try await Self.events(gateway).filter { $0.name == .registrationStarted }.count == 2)
        }
    }

    /// Started from the Chats tab, left, resumed from the banner in an app: afterwards the member is back in that app,
    /// and the done page offers Chats, Calls and Stories besides. A hostile way back is refused for the known one.
    @Test func aResumedFlowReturnsWhereTheMemberResumedIt() async throws {
        try await Self.live { gateway in
            let alice = try await Member.signIn(gateway, as: "alice")
            #expect(try await alice.get("/upgrade?from=link&return_to=%2Fchats").location == Paths.upgrade(.phone))
            #expect(try await alice.post(Paths.upgrade(.phone), [("phone", "+15550100001")]).location == Paths.upgrade(.code))
            // A way back that is no path of the gateway's leaves the flow's own as it was.
            let resumed = Paths.upgrade(.code) + "?resumed=1"
            #expect(try await alice.get("/upgrade?from=banner&return_to=https%3A%2F%2Fevil.example%2F").location == resumed)
            #expect(try await alice.get("/upgrade?from=banner&return_to=%2Fapps%2Flinks%2Fabout%3Fa%3D1").location == resumed)
            let code = try await alice.inboxCode()
            #expect(try await alice.post(Paths.upgrade(.code), [("code", code)]).location == Paths.upgrade(.username))
            #expect(try await alice.post(Paths.upgrade(.username), [("username", "alice.back")]).location == Paths.upgrade(.pin))
            #expect(try await alice.post(Paths.upgrade(.pin), [("pin", "2580"), ("pin_confirmation", "2580")]).location == Paths.upgrade(.profile))
            let finished = try await alice.post(Paths.upgrade(.profile), [("display_name", "Alice"), ("discoverability", "nobody")])
            let done = try #require(finished.location)
            #expect(done == FormEncoding.url(Paths.upgradeDone, adding: [("next", "/apps/links/about?a=1")]))
            let page = try await alice.get(done)
            #expect(page.body.contains("id=\"continue\" href=\"/apps/links/about?a=1\""))
            for (id, path) in [("chats", Paths.chats), ("calls", Paths.calls), ("stories", Paths.stories)] {
                #expect(page.body.contains("id=\"open-\(id)\" href=\"\(path)\""))
            }
        }
    }

    @Test func theHTTPSenderPostsTheCodeAndReportsFailuresClearly() async throws {
        try await JSONReceiver.run { receiver in
            try await Self.live(configure: {
                $0.registration.codeSender = .http
                $0.registration.codeSenderEndpoint = HTTPEndpointConfiguration(
                    url: receiver.url, authorizationHeader: "X-Api-Key", authorization: "sms-secret", timeoutSeconds: 1)
            }) { gateway in
                let alice = try await Member.signIn(gateway, as: "alice")
                _ = try await alice.get("/upgrade?from=portal")
                // Refused by the API, then too slow: the member sees one clear message and keeps the number.
                for behaviour in [JSONReceiver.Behaviour.fail(status: 503), .hang(seconds: 3)] {
                    await receiver.state.set([behaviour])
                    let failed = try await alice.post(Paths.upgrade(.phone), [("phone", "+15550100001")])
                    #expect(failed.status == 422 && failed.body.contains("could not be sent") && failed.body.contains("value=\"+15550100001\""))
                }
                await receiver.state.set([.accept])
                #expect(try await alice.post(Paths.upgrade(.phone), [("phone", "+15550100001")]).location == Paths.upgrade(.code))
                let sent = try #require(await receiver.received.last)
                #expect(sent.headers["x-api-key"] == "sms-secret" && sent.headers["content-type"] == "application/json")
                #expect(sent.json["to"] == "+15550100001" && sent.json["message"]?.contains("Signal verification code") == true)
                let code = try #require(sent.json["code"])
                #expect(try await alice.post(Paths.upgrade(.code), [("code", code)]).location == Paths.upgrade(.username))
                // Nothing went to the development inbox.
                #expect(try await alice.get(Paths.developmentInbox).body.contains("id=\"inbox-empty\""))
            }
        }
        // A sender that is down.
        try await Self.live(configure: {
            $0.registration.codeSender = .http
            $0.registration.codeSenderEndpoint = HTTPEndpointConfiguration(url: URL(string: "http://127.0.0.1:9/hook")!, timeoutSeconds: 2)
        }) { gateway in
            let alice = try await Member.signIn(gateway, as: "alice")
            _ = try await alice.get("/upgrade?from=portal")
            let failed = try await alice.post(Paths.upgrade(.phone), [("phone", "+15550100001")])
            #expect(failed.status == 422 && failed.body.contains("could not be sent"))
            #expect(MetricsTests.samples(gateway.built.metrics.exposition())["gatehouse_verification_code_send_failures_total"] == 1)
        }
    }

    @Test func theProvisioningWebhookIsRetriedWithoutLosingTheRegistration() async throws {
        try await JSONReceiver.run { receiver in
            await receiver.state.set([.fail(status: 500), .fail(status: 502), .accept])
            try await Self.live(configure: {
                $0.registration.provisioning = ProvisioningConfiguration(
                    endpoint: HTTPEndpointConfiguration(url: receiver.url, authorization: "Bearer hook-token"), maximumAttempts: 5,
                    retryBaseSeconds: 0.2, pollSeconds: 0.2)
            }) { gateway in
                let olive = try await Member.signIn(gateway, as: "olive")
                let done = try await olive.register(username: "olive.o", phone: "+15550100003")
                #expect(done.location?.hasPrefix(Paths.upgradeDone) == true)
                // Registered at once, whatever the webhook does.
                #expect(try await olive.get("/chats").location == "/apps/chat/")
                var delivered = false
                for _ in 0..<100 where !delivered {
                    try await Task.sleep(for: .milliseconds(100))
                    delivered = await receiver.received.count >= 3
                }
                let calls = await receiver.received
                #expect(calls.count == 3)
                let payload = try #require(calls.last)
                #expect(payload.headers["authorization"] == "Bearer hook-token")
                #expect(payload.json["username"] == "olive.o" && payload.json["phone_number"] == "+15550100003")
                #expect(
                    payload.json["display_name"] == "Member olive.o" && payload.json["sub"] == DevelopmentAccounts.account(username: "olive")?.sub)
                #expect(payload.json["pin_hash"] == nil && !payload.json.values.contains { $0.hasPrefix("$2b$") })
                // The operator's report shows nothing waiting any more.
                try await Task.sleep(for: .milliseconds(300))
                let funnel = try await olive.get("/operator/funnel?days=1", json: true)
                #expect(funnel.body.contains("\"provisioning\":{\"failed\":0,\"waiting\":0}"))
            }
        }
    }

    @Test func theFunnelIsForOperatorsOnly() async throws {
        try await Self.live { gateway in
            let alice = try await Member.signIn(gateway, as: "alice")
            let refused = try await alice.get("/operator/funnel")
            #expect(refused.status == 403 && refused.headers.first(name: "Content-Type") == "application/json")
            let olive = try await Member.signIn(gateway, as: "olive")
            _ = try await olive.get("/upgrade?from=portal")
            let report = try await olive.get("/operator/funnel?days=1")
            #expect(report.status == 200 && report.headers.first(name: "Content-Type") == "application/json")
            let json = try #require(try JSONSerialization.jsonObject(with: Data(report.body.utf8)) as? [String: Any])
            let steps = try #require(json["steps"] as? [[String: Any]])
            #expect(steps.first?["event"] as? String == "sso_login_success" && steps.first?["members"] as? Int == 2)
            #expect(steps.first { $0["event"] as? String == "registration_started" }?["members"] as? Int == 1)
            for bad in ["days=0", "days=many", "since=yesterday", "days=2&since=2026-01-01"] {
                let reply = try await olive.get("/operator/funnel?\(bad)")
                #expect(reply.status == 400 && reply.body.contains("\"error\":\"bad_request\""))
            }
            // Signed out: no report, and API callers get JSON.
            let anonymous = try await gateway.get("/operator/funnel", cookies: [:], headers: [("Accept", "application/json")])
            #expect(anonymous.status == 401)
        }
    }

    /// A hundred wrong guesses and the right code, all at once, at one flow: at most five entries are ever compared.
    @Test func parallelGuessesGetNoMoreThanFiveTries() async throws {
        try await Self.live { gateway in
            let bob = try await Member.signIn(gateway, as: "bob")
            #expect(try await bob.get("/upgrade?from=portal").location == Paths.upgrade(.phone))
            #expect(try await bob.post(Paths.upgrade(.phone), [("phone", "+15550100007")]).location == Paths.upgrade(.code))
            let code = try await bob.inboxCode()
            let wrong = code == "000000" ? "111111" : "000000"
            let csrf = try await bob.csrf()
            let replies = try await withThrowingTaskGroup(of: LiveGateway.Reply.self) { group in
                for index in 0..<101 {
                    group.addTask { try await bob.post(Paths.upgrade(.code), [("code", index == 60 ? code : wrong)], csrf: csrf) }
                }
                var replies: [LiveGateway.Reply] = []
                for try await reply in group { replies.append(reply) }
                return replies
            }
            // Compared entries answer "wrong" (422) or move on to the username; the rest found no try left.
            let compared = replies.filter { $0.status == 422 || $0.location == Paths.upgrade(.username) }
            #expect(compared.count <= 5)
            #expect(replies.filter { $0.status == 422 }.count <= 4)
            // Whatever happened, the code is spent: no further entry is compared.
            let after = try await bob.post(Paths.upgrade(.code), [("code", code)], csrf: csrf)
            #expect(after.status != 422)
        }
    }

    @Test func codeRateLimitsAndSendsAreCountedForOperators() async throws {
        try await Self.live(configure: { $0.registration.rules.codesPerMember = 1 }) { gateway in
            let bob = try await Member.signIn(gateway, as: "bob")
            _ = try await bob.get("/upgrade?from=portal")
            #expect(try await bob.post(Paths.upgrade(.phone), [("phone", "+442079460958")]).location == Paths.upgrade(.code))
            #expect(try await bob.post(Paths.upgradeCancel, []).location?.hasPrefix(Paths.chats) == true)
            _ = try await bob.get("/upgrade?from=portal")
            let refused = try await bob.post(Paths.upgrade(.phone), [("phone", "+442079460958")])
            #expect(refused.status == 422 && refused.body.contains("too many codes"))
            let samples = MetricsTests.samples(gateway.built.metrics.exposition())
            #expect(samples["gatehouse_verification_codes_sent_total"] == 1)
            #expect(samples[#"gatehouse_verification_codes_rate_limited_total{limit="member"}"#] == 1)
            #expect(samples["gatehouse_registrations_started_total"] == 2)
        }
    }
}
