import Foundation
import GatehouseCore
import Testing

@testable import Gatehouse

/// The upgrade against a real Synapse homeserver: the account it makes (name, phone, the link to the member's SSO
/// subject), names the homeserver has, a homeserver that stops at the last step, accounts members already had, and
/// what `check-config` says of a homeserver it cannot use.
///
/// The development provider's members have fixed subjects, so each test links accounts under an `auth_provider` of
/// its own and chooses names of its own: tests share one homeserver without seeing each other's accounts.
@Suite struct SynapseChatTests {
    static func unique(_ prefix: String) -> String {
        prefix + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(10).lowercased()
    }

    static func sub(_ username: String) throws -> String {
        try #require(DevelopmentAccounts.all.first { $0.username == username }).sub
    }

    /// A gateway making accounts on `synapse`, linked under `provider`, with a chat app (`chat-echo`, registered
    /// members only) that reports the headers it receives and is told the member's Matrix ID.
    static func live<T>(_ synapse: TestSynapse, provider: String, _ body: (LiveGateway) async throws -> T) async throws -> T {
        try await EchoUpstream.run { upstream in
            try await UpgradeFlowTests.live(configure: { configuration in
                configuration.registration.chat = synapse.chat
                configuration.registration.chat.authProvider = provider
                configuration.apps.append(
                    AppConfiguration(
                        slug: "chat-echo", name: "Chat", upstream: URL(string: upstream.origin + "/")!, minimumLevel: .registered,
                        headers: AppHeaderConfiguration(identity: ["X-Forwarded-User": .sub, "X-Forwarded-Chat-User": .chatUserID])))
            }) { gateway in try await body(gateway) }
        }
    }

    /// The Matrix ID the chat app was told, if any.
    static func chatUserSeen(by member: UpgradeFlowTests.Member) async throws -> String? {
        let reply = try await member.get(Paths.app("chat-echo") + "/echo", json: true)
        let report = try JSONSerialization.jsonObject(with: Data(reply.body.utf8)) as? [String: Any]
        return ((report?["headers"] as? [String: [String]])?["x-forwarded-chat-user"])?.first
    }

    static func links(_ user: [String: Any]?, provider: String) -> [String] {
        ((user?["external_ids"] as? [[String: Any]]) ?? []).filter { $0["auth_provider"] as? String == provider }.compactMap {
            $0["external_id"] as? String
        }
    }

    @Test func anUpgradeMakesTheMembersChatAccountBeforeSayingSo() async throws {
        let synapse = try await TestSynapse.shared.value
        let provider = Self.unique("p")
        let name = Self.unique("Ada.")
        try await Self.live(synapse, provider: provider) { gateway in
            let member = try await UpgradeFlowTests.Member.signIn(gateway, as: "alice")
            let done = try await member.register(username: name, phone: "+4930123456")
            #expect(done.location?.hasPrefix(Paths.upgradeDone) == true)
            // The account: the lower-cased name, the display name, the verified number, the link to the subject.
            let user = try #require(try await synapse.user(name.lowercased()))
            #expect(user["displayname"] as? String == "Member \(name)")
            #expect((user["threepids"] as? [[String: Any]])?.map { "\($0["medium"] ?? ""):\($0["address"] ?? "")" } == ["msisdn:4930123456"])
            #expect(Self.links(user, provider: provider) == [try Self.sub("alice")])
            // The registration holds the Matrix ID, and the done page names it.
            let account = try await gateway.built.stores.registrations.account(sub: try Self.sub("alice"))
            #expect(account?.chatUserID == "@\(name.lowercased()):\(TestSynapse.serverName)")
            #expect(try await member.get(try #require(done.location)).body.contains("@\(name.lowercased()):\(TestSynapse.serverName)"))
            // The chat app learns the account from the gateway, in the session the member already has.
            #expect(try await Self.chatUserSeen(by: member) == "@\(name.lowercased()):\(TestSynapse.serverName)")
        }
    }

    @Test func aNameTheHomeserverHasIsRefusedAtTheUsernameStep() async throws {
        let synapse = try await TestSynapse.shared.value
        let taken = Self.unique("taken")
        #expect(try await synapse.admin(.PUT, "/_synapse/admin/v2/users/@\(taken):\(TestSynapse.serverName)", json: ["displayname": "Someone"]).status == 201)
        try await Self.live(synapse, provider: Self.unique("p")) { gateway in
            let member = try await UpgradeFlowTests.Member.signIn(gateway, as: "bob")
            #expect(try await member.get("/upgrade?from=portal").location == Paths.upgrade(.phone))
            #expect(try await member.post(Paths.upgrade(.phone), [("phone", "+15550100002")]).location == Paths.upgrade(.code))
            #expect(try await member.post(Paths.upgrade(.code), [("code", try await member.inboxCode())]).location == Paths.upgrade(.username))
            // While typing: in any letter case, with the reason.
            let check = try await member.get("\(Paths.upgradeUsernameCheck)?username=\(taken.uppercased())", json: true)
            let answer = try #require(try JSONSerialization.jsonObject(with: Data(check.body.utf8)) as? [String: Any])
            #expect(answer["available"] as? Bool == false && answer["reason"] as? String == "taken")
            // And on the server when the step is sent: the member stays at the step with the message.
            let refused = try await member.post(Paths.upgrade(.username), [("username", taken)])
            #expect(refused.status == 422 && refused.body.contains("This username is taken."))
            let free = try await member.get("\(Paths.upgradeUsernameCheck)?username=\(Self.unique("free"))", json: true)
            #expect(free.body.contains("\"available\":true"))
        }
    }

    /// The homeserver stops while the member is at the last step: the member stays there with a clear message and a
    /// retry, nothing is registered; once it is back, the retry makes one account. An account an earlier attempt made
    /// (its answer lost) is completed, not duplicated.
    @Test func aHomeserverThatStopsAtTheLastStepLeavesTheFlowResumable() async throws {
        try await TestSynapse.own { synapse in
            let provider = Self.unique("p")
            let name = Self.unique("grace")
            try await Self.live(synapse, provider: provider) { gateway in
                let member = try await UpgradeFlowTests.Member.signIn(gateway, as: "alice")
                #expect(try await member.get("/upgrade?from=portal").location == Paths.upgrade(.phone))
                #expect(try await member.post(Paths.upgrade(.phone), [("phone", "+15550100001")]).location == Paths.upgrade(.code))
                #expect(try await member.post(Paths.upgrade(.code), [("code", try await member.inboxCode())]).location == Paths.upgrade(.username))
                #expect(try await member.post(Paths.upgrade(.username), [("username", name)]).location == Paths.upgrade(.pin))
                #expect(try await member.post(Paths.upgrade(.pin), [("pin", "2580"), ("pin_confirmation", "2580")]).location == Paths.upgrade(.profile))

                try await synapse.stop()
                let profile = [("display_name", "Grace"), ("discoverability", "nobody")]
                let failed = try await member.post(Paths.upgrade(.profile), profile)
                #expect(failed.status == 503 && failed.headers.first(name: "Retry-After") == "10")
                #expect(failed.body.contains("Your chat account could not be created") && failed.body.contains("href=\"#finish\""))
                #expect(failed.body.contains("value=\"Grace\""))
                #expect(try await member.get(Paths.upgrade(.profile)).status == 200)
                #expect(try await gateway.built.stores.registrations.account(sub: try Self.sub("alice")) == nil)

                // Back, with the account the lost attempt made already there.
                let restarted = try await TestSynapse.start(synapse.directory)
                let userID = "@\(name):\(TestSynapse.serverName)"
                let made = try await restarted.admin(
                    .PUT, "/_synapse/admin/v2/users/\(userID)",
                    json: ["displayname": "Grace", "external_ids": [["auth_provider": provider, "external_id": try Self.sub("alice")]]])
                #expect(made.status == 201)
                let done = try await member.post(Paths.upgrade(.profile), profile)
                #expect(done.location?.hasPrefix(Paths.upgradeDone) == true)
                let account = try await gateway.built.stores.registrations.account(sub: try Self.sub("alice"))
                #expect(account?.chatUserID == userID)
                let linked = try await restarted.admin(.GET, "/_synapse/admin/v1/auth_providers/\(provider)/users/\(try Self.sub("alice"))")
                #expect(linked.json["user_id"] as? String == userID)
                #expect((try await restarted.user(name))?["threepids"] as? [[String: Any]] != nil)
            }
        }
    }

    /// A member whose subject the homeserver already links to a live account is `registered` at sign-in, with that
    /// account; a deactivated one does not count.
    @Test func anExistingLinkedAccountMakesTheMemberRegisteredAtSignIn() async throws {
        let synapse = try await TestSynapse.shared.value
        let provider = Self.unique("p")
        let existing = Self.unique("bob")
        let gone = Self.unique("alice")
        let link = { (sub: String) in ["external_ids": [["auth_provider": provider, "external_id": sub]]] }
        #expect(try await synapse.admin(.PUT, "/_synapse/admin/v2/users/@\(existing):\(TestSynapse.serverName)", json: link(try Self.sub("bob"))).status == 201)
        #expect(try await synapse.admin(.PUT, "/_synapse/admin/v2/users/@\(gone):\(TestSynapse.serverName)", json: link(try Self.sub("alice"))).status == 201)
        #expect(try await synapse.admin(.POST, "/_synapse/admin/v1/deactivate/@\(gone):\(TestSynapse.serverName)", json: ["erase": false]).status == 200)
        try await Self.live(synapse, provider: provider) { gateway in
            // With nowhere in particular to go, a registered member starts in their chats; a deep link still wins.
            #expect(try await SignInFlowTests.signIn(gateway, as: "bob", deepLink: "/").callbackReply?.location == Paths.chats)
            #expect(try await SignInFlowTests.signIn(gateway, as: "bob", deepLink: "/calls").callbackReply?.location == Paths.calls)
            let bob = try await UpgradeFlowTests.Member.signIn(gateway, as: "bob")
            #expect(try await bob.get("/upgrade?from=portal").location == Paths.chats)
            let account = try await gateway.built.stores.registrations.account(sub: try Self.sub("bob"))
            #expect(account?.chatUserID == "@\(existing):\(TestSynapse.serverName)" && account?.username == existing)
            #expect(try await bob.get(Paths.portal).body.contains(existing))

            #expect(try await Self.chatUserSeen(by: bob) == "@\(existing):\(TestSynapse.serverName)")

            // Not registered: the web apps, as before.
            #expect(try await SignInFlowTests.signIn(gateway, as: "alice", deepLink: "/").callbackReply?.location == Paths.portal)
            let alice = try await UpgradeFlowTests.Member.signIn(gateway, as: "alice")
            #expect(try await alice.get("/upgrade?from=portal").location == Paths.upgrade(.phone))
        }
    }

    /// An operator finds the member by username or Matrix ID and resets their upgrade: with "end the account" the
    /// homeserver deactivates it and unlinks the subject (the member may upgrade again, to a new account), the member
    /// is back at `sso` at once, and the audit event names the operator. With "keep" the account stays and is found
    /// again at the member's next sign-in. Members without the role get nothing.
    @Test func anOperatorResetsAMembersUpgrade() async throws {
        let synapse = try await TestSynapse.shared.value
        let provider = Self.unique("p")
        let name = Self.unique("lost")
        try await Self.live(synapse, provider: provider) { gateway in
            let alice = try await UpgradeFlowTests.Member.signIn(gateway, as: "alice")
            _ = try await alice.register(username: name)
            let userID = "@\(name):\(TestSynapse.serverName)"
            #expect(try await alice.get("/upgrade?from=portal").location == Paths.chats)

            let bob = try await UpgradeFlowTests.Member.signIn(gateway, as: "bob")
            #expect(try await bob.get("\(Paths.operatorMembers)?q=\(name)").status == 403)
            let olive = try await UpgradeFlowTests.Member.signIn(gateway, as: "olive")
            let page = try await olive.get("\(Paths.operatorMembers)?q=\(userID.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")")
            let alicesSub = try Self.sub("alice")
            #expect(page.status == 200 && page.body.contains("<bdi>\(userID)</bdi>") && page.body.contains(alicesSub))
            let json = try await olive.get("\(Paths.operatorMembers)?q=\(name.uppercased())", json: true)
            #expect(json.body.contains("\"chat_user_id\":\"@\(name):"))
            #expect(try await olive.get("\(Paths.operatorMembers)?q=nobody-at-all", json: true).status == 404)
            // A reset without a choice is refused, and changes nothing.
            #expect(try await olive.post(Paths.operatorMembersReset, [("sub", try Self.sub("alice"))]).status == 400)

            let reset = try await olive.post(Paths.operatorMembersReset, [("sub", try Self.sub("alice")), ("chat_account", "deactivate")])
            #expect(reset.location?.hasPrefix("\(Paths.operatorMembers)?reset=deactivate") == true)
            let user = try #require(try await synapse.user(name))
            #expect(user["deactivated"] as? Bool == true && Self.links(user, provider: provider).isEmpty)
            // Alice is at `sso` at once, in the session she has open, and may upgrade again.
            #expect(try await alice.get("/upgrade?from=portal").location == Paths.upgrade(.phone))
            #expect(try await gateway.built.stores.registrations.account(sub: try Self.sub("alice")) == nil)
            let audit = try await UpgradeFlowTests.events(gateway).filter { $0.name == .registrationReset }
            let olivesSub = try Self.sub("olive")
            #expect(audit.map(\.detail) == ["deactivated by \(olivesSub)"])
        }
        // Kept: the account stays live and linked, and makes the member registered again at the next sign-in.
        let kept = Self.unique("kept")
        let keptProvider = Self.unique("p")
        try await Self.live(synapse, provider: keptProvider) { gateway in
            let bob = try await UpgradeFlowTests.Member.signIn(gateway, as: "bob")
            _ = try await bob.register(username: kept, phone: "+15550100002")
            let olive = try await UpgradeFlowTests.Member.signIn(gateway, as: "olive")
            let reset = try await olive.post(Paths.operatorMembersReset, [("sub", try Self.sub("bob")), ("chat_account", "keep")])
            #expect(reset.location?.hasPrefix("\(Paths.operatorMembers)?reset=keep") == true)
            #expect(try await synapse.user(kept)?["deactivated"] as? Bool == false)
            #expect(try await bob.get("/upgrade?from=portal").location == Paths.upgrade(.phone))
            let again = try await UpgradeFlowTests.Member.signIn(gateway, as: "bob")
            #expect(try await again.get("/upgrade?from=portal").location == Paths.chats)
        }
    }

    /// The account page: the display name and discoverability, and a new phone number confirmed with a code, each
    /// confirmed with the PIN; the homeserver's account changes with them. Wrong PINs are counted: after five in the
    /// window even the right one is refused.
    @Test func theAccountPagesChangesReachTheHomeserver() async throws {
        let synapse = try await TestSynapse.shared.value
        let provider = Self.unique("p")
        let name = Self.unique("acct")
        try await Self.live(synapse, provider: provider) { gateway in
            let member = try await UpgradeFlowTests.Member.signIn(gateway, as: "bob")
            _ = try await member.register(username: name, phone: "+15550100002")
            let page = try await member.get(Paths.account)
            #expect(page.status == 200 && page.body.contains("<bdi>@\(name):\(TestSynapse.serverName)</bdi>"))
            #expect(try await member.get(Paths.portal).body.contains("href=\"/account\""))

            let profile = [("display_name", "Bob the Builder"), ("discoverability", "nobody")]
            let wrong = try await member.post(Paths.accountProfile, profile + [("pin", "1111")])
            #expect(wrong.status == 422 && wrong.body.contains("That PIN is not right. 4 tries left in this hour."))
            #expect(try await synapse.user(name)?["displayname"] as? String == "Member \(name)")
            let missing = try await member.post(Paths.accountProfile, profile)
            #expect(missing.status == 422 && missing.body.contains("Enter your PIN"))

            let saved = try await member.post(Paths.accountProfile, profile + [("pin", "2580")])
            #expect(saved.location == Paths.account + "?saved=profile")
            #expect(try await synapse.user(name)?["displayname"] as? String == "Bob the Builder")
            let after = try await gateway.built.stores.registrations.account(sub: try Self.sub("bob"))
            #expect(after?.displayName == "Bob the Builder" && after?.discoverability == .nobody)

            // A new number: the PIN, then the code sent to it.
            #expect(try await member.post(Paths.accountPhone, [("phone", "+49 30 1234567"), ("pin", "2580")]).location == Paths.accountPhoneCode)
            #expect(try await member.post(Paths.accountPhoneCode, [("code", "000000")]).status == 422)
            let confirmed = try await member.post(Paths.accountPhoneCode, [("code", try await member.inboxCode())])
            #expect(confirmed.location == Paths.account + "?saved=phone")
            let threepids = try await synapse.user(name)?["threepids"] as? [[String: Any]]
            #expect(threepids?.compactMap { $0["address"] as? String } == ["49301234567"])
            #expect(try await gateway.built.stores.registrations.account(sub: try Self.sub("bob"))?.phoneNumber?.e164 == "+49301234567")

            // Four more wrong PINs (one was spent above, the right ones were given back): then even the right one waits.
            for _ in 0..<4 { _ = try await member.post(Paths.accountProfile, profile + [("pin", "9999")]) }
            let locked = try await member.post(Paths.accountProfile, profile + [("pin", "2580")])
            #expect(locked.status == 422 && locked.body.contains("Too many wrong PINs."))
        }
    }

    /// What `check-config` says: nothing for a homeserver it can use; otherwise what is wrong, by key.
    @Test func checkConfigSaysWhatIsWrongWithTheHomeserver() async throws {
        let synapse = try await TestSynapse.shared.value
        #expect(await synapse.chat.problems() == [])

        var wrongToken = synapse.chat
        wrongToken.adminToken = "not-a-token"
        #expect(await wrongToken.problems().first?.hasPrefix("chat.admin_token_file: the homeserver does not accept the token") == true)

        let member = Self.unique("member")
        let password = Self.unique("pw")
        #expect(try await synapse.admin(.PUT, "/_synapse/admin/v2/users/@\(member):\(TestSynapse.serverName)", json: ["password": password]).status == 201)
        let login = try await synapse.call(
            .POST, "/_matrix/client/v3/login",
            json: ["type": "m.login.password", "identifier": ["type": "m.id.user", "user": member], "password": password], token: nil)
        var notAdmin = synapse.chat
        notAdmin.adminToken = try #require(login.json["access_token"] as? String)
        #expect(await notAdmin.problems() == ["chat.admin_token_file: the token is @\(member):\(TestSynapse.serverName)'s, who is not a homeserver admin"])

        var unknownProvider = synapse.chat
        unknownProvider.authProvider = "keycloak"
        #expect(await unknownProvider.problems().first?.hasPrefix("chat.auth_provider: the homeserver has no OIDC provider \"keycloak\" (it has: oidc)") == true)

        var wrongServer = synapse.chat
        wrongServer.serverName = "chat.example"
        #expect(await wrongServer.problems().first?.hasPrefix("chat.server_name:") == true)

        var unreachable = synapse.chat
        unreachable.homeserverURL = URL(string: "http://127.0.0.1:9")
        #expect(await unreachable.problems().first?.hasPrefix("chat.homeserver_url: cannot reach the homeserver at http://127.0.0.1:9") == true)
    }
}
