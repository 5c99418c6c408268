import Foundation
import GatehouseCore
import Testing

@testable import Gatehouse

@Suite struct ConfigurationLoaderTests {
    /// A store key, as every configuration outside development mode needs one.
    static let storageKey = ["GATEHOUSE_STORAGE_ENCRYPTION_KEY": Data(repeating: 7, count: 32).base64EncodedString()]

    func loader(_ files: [String: String], environment: [String: String] = [:]) -> ConfigurationLoader {
        ConfigurationLoader(environment: environment.merging(Self.storageKey) { given, _ in given }, developmentDefaults: .standard) { path in
            guard let text = files[path] else { throw CocoaLikeMissingFile() }
            return text
        }
    }

    struct CocoaLikeMissingFile: Error {}

    func problems(_ json: String, environment: [String: String] = [:], development: Bool = false) -> [String] {
        do {
            _ = try loader(["g.json": json], environment: environment).load(path: "g.json", development: development)
            return []
        } catch {
            return error.problems.map(\.keyPath)
        }
    }

    /// A chat feature's tab names its app by slug, or by an object that also says who the feature is for.
    @Test func aFeatureMayNameWhoItIsFor() throws {
        let json = """
            {"features": {"chats": {"app": "chat", "required_roles": ["chat-user"], "required_groups": ["/staff"]},
                          "stories": {"required_groups": ["/staff"]}}}
            """
        let configuration = try loader(["g.json": json]).load(path: "g.json", development: true)
        #expect(configuration.features.chats == "chat")
        #expect(configuration.features.audiences[.chats] == FeatureAudience(requiredRoles: ["chat-user"], requiredGroups: ["/staff"]))
        #expect(configuration.features.audiences[.stories] == FeatureAudience(requiredGroups: ["/staff"]))
        #expect(configuration.features.audiences[.calls] == nil)
        let staff = MemberIdentity(sub: "s", roles: ["chat-user"], groups: ["/staff"])
        let volunteer = MemberIdentity(sub: "v", roles: ["chat-user"], groups: ["/volunteers"])
        #expect(configuration.features.offers(.chats, to: staff) && !configuration.features.offers(.chats, to: volunteer))
        #expect(configuration.features.offers(.calls, to: volunteer))
        // The environment sets them too; a list that is not one is named.
        let fromEnvironment = try loader(["g.json": "{}"], environment: ["GATEHOUSE_FEATURES_CALLS_REQUIRED_ROLES": "callers"])
            .load(path: "g.json", development: true)
        #expect(fromEnvironment.features.audiences[.calls] == FeatureAudience(requiredRoles: ["callers"]))
        #expect(problems(#"{"features": {"chats": {"required_roles": "chat-user"}}}"#, development: true) == ["features.chats.required_roles"])
    }

    @Test func readsAHomesteadHeritageStyleFile() throws {
        let json = """
            {"public_url": "https://gate.homesteadheritage.org",
             "listen": {"host": "0.0.0.0", "port": 8443},
             "oidc": {"issuer": "https://auth.homesteadheritage.org/realms/heritage", "client_id": "signal_homesteadheritage_org"},
             "allowlist": ["*.homesteadheritage.org"],
             "apps": [{"slug": "wiki", "name": "Wiki", "upstream": "https://wiki.homesteadheritage.org", "required_roles": ["user"]},
                      {"slug": "chat", "name": "Chat", "upstream": "https://chat.homesteadheritage.org", "minimum_level": "registered"}],
             "brand": {"chat_product_name": "Signal"},
             "features": {"chats": "chat"},
             "registration": {"code_sender": {"kind": "http", "url": "https://sms.homesteadheritage.org/send", "authorization_header": "X-Api-Key"},
                              "provisioning": {"url": "https://signal.homesteadheritage.org/provision", "max_attempts": 5}},
             "operator": {"role": "gateway-operators"}}
            """
        let configuration = try ConfigurationLoader(
            environment: Self.storageKey.merging([
                "GATEHOUSE_OIDC_CLIENT_SECRET": "s3cret", "GATEHOUSE_REGISTRATION_CODE_SENDER_AUTHORIZATION": "sms-key",
                "GATEHOUSE_REGISTRATION_PROVISIONING_AUTHORIZATION_FILE": "/run/secrets/provisioning",
            ]) { given, _ in given },
            developmentDefaults: .standard,
            readFile: { path in
                guard let text = ["g.json": json, "/run/secrets/provisioning": "Bearer provisioning-token\n"][path] else {
                    throw CocoaLikeMissingFile()
                }
                return text
            }
        ).load(path: "g.json")
        #expect(configuration.oidc.clientID == "signal_homesteadheritage_org")
        #expect(configuration.oidc.clientSecret == "s3cret")
        #expect(configuration.oidc.scopes == ["openid", "profile", "email", "phone", "roles", "groups"])
        #expect(configuration.apps.map(\.minimumLevel) == [.sso, .registered])
        #expect(configuration.cookieIsSecure)
        #expect(configuration.redirectURI == "https://gate.homesteadheritage.org/auth/callback")
        #expect(!configuration.developmentMode)
        #expect(configuration.features == FeaturesConfiguration(chats: "chat"))
        #expect(configuration.operatorRole == "gateway-operators")
        let registration = configuration.registration
        #expect(registration.codeSender == .http)
        #expect(registration.codeSenderEndpoint?.url.absoluteString == "https://sms.homesteadheritage.org/send")
        #expect(registration.codeSenderEndpoint?.authorizationHeader == "X-Api-Key")
        #expect(registration.codeSenderEndpoint?.authorization == "sms-key")
        #expect(registration.provisioning.endpoint?.authorization == "Bearer provisioning-token")
        #expect(registration.provisioning.maximumAttempts == 5)
    }

    @Test func environmentOverridesTheFile() throws {
        let json =
            #"{"public_url":"https://a.example.org","oidc":{"issuer":"https://idp.example.org","client_id":"a"},"registration":{"code_sender":{"kind":"http","url":"https://sms.example.org/send"}}}"#
        let configuration = try loader(
            ["g.json": json],
            environment: [
                "GATEHOUSE_OIDC_CLIENT_ID": "from-env", "GATEHOUSE_LISTEN_PORT": "9999", "GATEHOUSE_OIDC_SCOPES": "openid,profile",
            ]
        ).load(path: "g.json")
        #expect(configuration.oidc.clientID == "from-env")
        #expect(configuration.listen.port == 9999)
        #expect(configuration.oidc.scopes == ["openid", "profile"])
    }

    @Test func secretsComeFromFilesNamedInTheEnvironment() throws {
        let json =
            #"{"public_url":"https://a.example.org","oidc":{"issuer":"https://idp.example.org","client_id":"a"},"registration":{"code_sender":{"kind":"http","url":"https://sms.example.org/send"}}}"#
        let configuration = try loader(
            ["g.json": json, "/run/secrets/oidc": "from-file\n"], environment: ["GATEHOUSE_OIDC_CLIENT_SECRET_FILE": "/run/secrets/oidc"]
        ).load(path: "g.json")
        #expect(configuration.oidc.clientSecret == "from-file")
    }

    /// Every problem, with its key path, in one pass.
    @Test func reportsEveryProblemAtOnce() {
        let json = """
            {"public_url": "http://gate.example.org/sub",
             "listen": {"port": 70000, "trusted_proxies": ["10.0.0.0/8", "lb.internal"]},
             "rate_limits": {"sign_in_starts": {"limit": 0}, "callbacks": {"period_seconds": "60"}},
             "oidc": {"issuer": "http://idp.example.org", "client_secret": "in-the-file", "scopes": ["profile"], "redirect_path": "callback"},
             "cookie": {"name": "bad name;", "domain": "evil.example"},
             "session": {"idle_timeout_seconds": 7200, "absolute_timeout_seconds": 3600},
             "storage": {"kind": "mysql"},
             "allowlist": ["*.com", "good.example.org"],
             "apps": [{"slug": "Bad Slug", "name": "", "upstream": "https://evil.example.net", "minimum_level": "none", "mount": "side"},
                      {"slug": "ok", "name": "OK", "upstream": "not a url", "pass_authorization": "yes", "gateway_bar": "off",
                       "pass_headers": ["Cookie", "X-Forwarded-For", "X-Webauth-User"], "identity_headers": {"X-Webauth-User": "password"}},
                      {"slug": "tokens", "name": "Tokens", "upstream": "https://tokens.example.org", "assertion_header": "Cookie", "mount": "external",
                       "pass_access_token": true, "pass_authorization": true, "assertion": "no", "case_insensitive_paths": "yes",
                       "rules": [{"paths": ["admin"], "action": "block", "methods": ["FETCH"]}, {"paths": ["/x"], "action": "deny",
                                 "require": {"roles": ["a"]}}, {"paths": ["/y/*"], "require": {"claims": {"department": "it"}, "level": "none"}}]},
                      "not an object"],
             "assertions": {"signing_key_file": "/nonexistent/assertion-key.pem", "rotation_days": 0},
             "tracing": {"otlp_endpoint": "ftp://collector"},
             "log_level": "chatty",
             "log_format": "xml",
             "metrics": {"port": 70000, "on_members_listener": "sometimes"},
             "features": {"chats": "ok", "calls": "nowhere"},
             "registration": {"code_sender": {"kind": "sms", "authorization": "in-the-file"}, "pin_bcrypt_cost": 4,
                              "provisioning": {"url": "http://provision.example.org"}},
             "operator": {"role": ""},
             "typo_key": true}
            """
        let keyPaths = problems(json)
        for expected in [
            "public_url", "listen.port", "oidc.issuer", "oidc.client_id", "oidc.client_secret", "oidc.scopes", "oidc.redirect_path",
            "cookie.name", "session.absolute_timeout_seconds", "storage.kind", "allowlist[0]", "apps[0].slug", "apps[0].name",
            "apps[0].upstream", "apps[0].minimum_level", "apps[0].mount", "apps[1].upstream", "apps[1].pass_authorization", "apps[1].gateway_bar",
            "apps[1].pass_headers", "apps[1].identity_headers.X-Webauth-User", "apps[3]", "log_level", "typo_key",
            "features.chats", "features.calls", "registration.code_sender.kind", "registration.code_sender.authorization",
            "registration.pin_bcrypt_cost", "registration.provisioning.url", "operator.role", "log_format", "metrics.port",
            "metrics.on_members_listener", "listen.trusted_proxies", "rate_limits.sign_in_starts.limit", "rate_limits.callbacks.period_seconds",
            "apps[2].assertion", "apps[2].assertion_header", "apps[2].pass_access_token", "assertions.signing_key_file",
            "apps[2].case_insensitive_paths", "cookie.domain", "apps[2].upstream", "apps[2].rules[0].paths", "apps[2].rules[0].action",
            "apps[2].rules[0].methods",
            "apps[2].rules[1].require", "apps[2].rules[2].require.claims.department", "apps[2].rules[2].require.level",
            "assertions.rotation_days", "tracing.otlp_endpoint",
        ] {
            #expect(keyPaths.contains(expected), "missing problem at \(expected); got \(keyPaths)")
        }
    }

    /// Rules per path, assertions and the access token, as an operator writes them.
    @Test func readsRulesPerPathAndWhatAnAppLearnsOfTheMember() throws {
        let json = """
            {"public_url": "https://gate.example.org", "oidc": {"issuer": "https://idp.example.org", "client_id": "gate"},
             "allowlist": ["wiki.example.org"], "assertions": {"rotation_days": 7},
             "registration": {"code_sender": {"kind": "http", "url": "https://sms.example.org/send"}},
             "apps": [{"slug": "wiki", "name": "Wiki", "upstream": "https://wiki.example.org", "case_insensitive_paths": true,
                       "assertion_header": "X-Pomerium-Jwt-Assertion", "pass_access_token": true,
                       "rules": [{"paths": ["/Admin/*", "//ops/./x"], "action": "deny"},
                                 {"paths": ["/api/*"], "methods": ["post"], "require": {"level": "registered", "roles": ["editor"],
                                  "groups": ["team"], "claims": {"email": ["a@example.org", "b@example.org"], "sub": "s1"}}}]}]}
            """
        let configuration = try loader(["g.json": json]).load(path: "g.json", development: false)
        let wiki = try #require(configuration.apps.first)
        #expect(configuration.assertions == AssertionsConfiguration(signingKeyFile: nil, rotationDays: 7))
        #expect(wiki.headers.assertion == "X-Pomerium-Jwt-Assertion" && wiki.headers.passAccessToken)
        let require = PathRules.Requirement(
            level: .registered, roles: ["editor"], groups: ["team"], claims: ["email": ["a@example.org", "b@example.org"], "sub": ["s1"]])
        #expect(
            wiki.rules
                == PathRules(
                    [.init(paths: ["/admin/*", "/ops/x"], action: .deny), .init(paths: ["/api/*"], methods: ["POST"], require: require)],
                    caseInsensitive: true))
    }

    /// A recent sign-in, a class of sign-in, the PIN and networks per rule, an app's own session limits; every wrong
    /// value reported with its key.
    @Test func readsWhatARuleAsksTheMemberToProveAndAnAppsSessionLimits() throws {
        let base = """
            {"public_url": "https://gate.example.org", "oidc": {"issuer": "https://idp.example.org", "client_id": "gate"},
             "allowlist": ["*.example.org"], "registration": {"code_sender": {"kind": "http", "url": "https://sms.example.org/send"}},
             "session": {"idle_timeout_seconds": 1800, "absolute_timeout_seconds": 43200},
             "apps": [{"slug": "hr", "name": "HR", "upstream": "https://hr.example.org", "session": SESSION,
                       "rules": [{"paths": ["/payroll/*"], "require": REQUIRE}]}]}
            """
        func json(_ session: String, _ require: String) -> String {
            base.replacingOccurrences(of: "SESSION", with: session).replacingOccurrences(of: "REQUIRE", with: require)
        }
        let app = try #require(
            try loader([
                "g.json": json(
                    #"{"max_age_seconds": 3600, "idle_seconds": 300}"#,
                    #"{"auth_age_seconds": 300, "acr": ["gold"], "pin_age_seconds": 60, "networks": ["10.0.0.0/8", "2001:db8::/32"]}"#)
            ]).load(path: "g.json", development: false).apps.first)
        #expect(app.sessionLimits == AppSessionLimits(maxAgeSeconds: 3600, idleSeconds: 300))
        let require = try #require(app.rules.rules.first?.require)
        #expect(require.authAgeSeconds == 300 && require.acr == ["gold"] && require.pinAgeSeconds == 60)
        #expect(require.networks == [IPNetwork("10.0.0.0/8")!, IPNetwork("2001:db8::/32")!] && app.rules.namesNetworks)

        let wrong = problems(
            json(
                #"{"max_age_seconds": 43200, "idle_seconds": true, "forever": 1}"#,
                #"{"auth_age_seconds": 0, "acr": "gold", "pin_age_seconds": 1.5, "networks": ["10.0.0.0/33", "office"]}"#))
        for expected in [
            "apps[0].session.max_age_seconds", "apps[0].session.idle_seconds", "apps[0].session.forever", "apps[0].rules[0].require.auth_age_seconds",
            "apps[0].rules[0].require.acr", "apps[0].rules[0].require.pin_age_seconds", "apps[0].rules[0].require.networks",
        ] {
            #expect(wrong.contains(expected), "missing problem at \(expected); got \(wrong)")
        }
        #expect(problems(json(#"{"idle_seconds": 1800}"#, "{}")).contains("apps[0].session.idle_seconds"))
    }

    /// What an operator sets to fit a third-party app: its policy, the cookies its scripts read, the rewriting, the
    /// bar's place, and whether it gets the mount's prefix; every wrong value reported with its key.
    @Test func readsHowEachAppIsFitted() throws {
        let base = """
            {"public_url": "https://gate.example.org", "oidc": {"issuer": "https://idp.example.org", "client_id": "gate"},
             "allowlist": ["*.example.org"], "registration": {"code_sender": {"kind": "http", "url": "https://sms.example.org/send"}},
             "apps": [APPS]}
            """
        let json = base.replacingOccurrences(
            of: "APPS",
            with: """
                {"slug": "lab", "name": "Lab", "upstream": "https://lab.example.org/", "client_cookies": "csrf", "gateway_bar": "bottom",
                 "content_security_policy": "app", "strip_prefix": false},
                {"slug": "prom", "name": "Prom", "upstream": "https://prom.example.org", "client_cookies": ["_xsrf", "csrf"], "rewrite": "html",
                 "content_security_policy": "default-src 'self'", "gateway_bar": false},
                {"slug": "wiki", "name": "Wiki", "upstream": "https://wiki.example.org"}
                """)
        let apps = try loader(["g.json": json]).load(path: "g.json", development: false).apps
        #expect(apps[0].clientCookies == AppConfiguration.csrfCookieNames && apps[0].gatewayBar == .bottom && apps[0].contentSecurityPolicy == .app)
        #expect(apps[0].upstream.absoluteString == "https://lab.example.org/apps/lab/" && apps[0].isToldItsPrefix && !apps[0].stripPrefix)
        #expect(apps[1].clientCookies == ["_xsrf"] + AppConfiguration.csrfCookieNames && apps[1].rewrite == .html && apps[1].gatewayBar == .handle)
        #expect(apps[1].contentSecurityPolicy == .custom("default-src 'self'"))
        #expect(
            apps[2].clientCookies == AppConfiguration.csrfCookieNames && apps[2].gatewayBar == .automatic && apps[2].rewrite == .full && apps[2].contentSecurityPolicy == .merge)
        #expect(!apps[2].isToldItsPrefix)
        let wrong = problems(
            base.replacingOccurrences(
                of: "APPS",
                with: """
                    {"slug": "lab", "name": "Lab", "upstream": "https://lab.example.org", "client_cookies": ["gatehouse_session", "a b", "__Host-x"],
                     "gateway_bar": "left", "rewrite": "some", "content_security_policy": "a, b", "strip_prefix": "no"}
                    """))
        #expect(
            wrong.sorted()
                == [
                    "apps[0].client_cookies", "apps[0].client_cookies", "apps[0].client_cookies", "apps[0].content_security_policy",
                    "apps[0].gateway_bar", "apps[0].rewrite", "apps[0].strip_prefix",
                ])
    }

    /// The session cookie must reach an external app's host: the gateway's own, or under `cookie.domain`.
    @Test func anExternalAppNeedsTheSessionCookieToReachItsHost() {
        func problems(domain: String?) -> [String] {
            let cookie = domain.map { #", "cookie": {"domain": "\#($0)"}"# } ?? ""
            return self.problems(
                #"{"public_url": "https://gate.example.org", "oidc": {"issuer": "https://idp.example.org", "client_id": "gate"}, "#
                    + #""registration": {"code_sender": {"kind": "http", "url": "https://sms.example.org/send"}}, "#
                    + #""allowlist": ["wiki.example.org"], "apps": [{"slug": "wiki", "name": "Wiki", "upstream": "https://wiki.example.org", "#
                    + #""mount": "external"}]\#(cookie)}"#)
        }
        #expect(problems(domain: nil) == ["apps[0].upstream"])
        #expect(problems(domain: "example.org").isEmpty)
        #expect(problems(domain: "other.example") == ["cookie.domain", "apps[0].upstream"])
        #expect(problems(domain: "org") == ["cookie.domain"])
    }

    /// The log sender has no inbox outside development mode: its codes would reach nobody.
    /// `chat.*` and who is offered the upgrade: the token from a file named in the configuration or from the
    /// environment (never the file itself); a synapse backend without what it needs, or with a homeserver reached in
    /// plain http off loopback, is refused with each key.
    @Test func readsTheChatHomeserverAndWhoMayUpgrade() throws {
        let base =
            #""public_url":"https://a.example.org","oidc":{"issuer":"https://idp.example.org","client_id":"a"},"registration":{"code_sender":{"kind":"http","url":"https://sms.example.org/send"},"required_roles":["chat-user"],"registered_claim":"matrix_user","enabled":false}"#
        let json = #"{"# + base + #","chat":{"backend":"synapse","homeserver_url":"https://matrix.example.org","server_name":"example.org","admin_token_file":"/run/secrets/synapse","auth_provider":"oidc-keycloak","timeout_seconds":4}}"#
        let configuration = try loader(["g.json": json, "/run/secrets/synapse": "syt_admin\n"]).load(path: "g.json")
        let chat = configuration.registration.chat
        #expect(chat.backend == .synapse && chat.homeserverURL?.absoluteString == "https://matrix.example.org" && chat.serverName == "example.org")
        #expect(chat.adminToken == "syt_admin" && chat.authProvider == "oidc-keycloak" && chat.timeoutSeconds == 4)
        #expect(configuration.registration.requiredRoles == ["chat-user"] && configuration.registration.registeredClaim == "matrix_user")
        #expect(!configuration.registration.enabled)

        let fromEnvironment = try loader(
            ["g.json": #"{"# + base + #","chat":{"backend":"synapse","homeserver_url":"https://matrix.example.org","server_name":"example.org"}}"#],
            environment: ["GATEHOUSE_CHAT_ADMIN_TOKEN": "syt_env"]
        ).load(path: "g.json")
        #expect(fromEnvironment.registration.chat.adminToken == "syt_env" && fromEnvironment.registration.chat.authProvider == "oidc")

        #expect(problems(#"{"# + base + #","chat":{"backend":"dendrite"}}"#) == ["chat.backend"])
        #expect(problems(#"{"# + base.replacingOccurrences(of: #""enabled":false"#, with: #""registered_landing":"nowhere""#) + "}") == ["registration.registered_landing"])
        #expect(configuration.registration.registeredLandingPath == Paths.chats)
        #expect(
            problems(#"{"# + base + #","chat":{"backend":"synapse","homeserver_url":"http://matrix.example.org","auth_provider":"a b"}}"#)
                == ["chat.homeserver_url", "chat.server_name", "chat.admin_token_file", "chat.auth_provider"])
        #expect(problems(#"{"# + base + #","chat":{"backend":"synapse"}}"#) == ["chat.homeserver_url", "chat.server_name", "chat.admin_token_file"])
        #expect(problems(#"{"# + base + #","chat":{"admin_token":"in-the-file"}}"#) == ["chat.admin_token"])
        // Without a chat section: today's behaviour, registrations in the gateway's own store.
        #expect(try loader(["g.json": #"{"# + base + "}"]).load(path: "g.json").registration.chat.backend == ChatConfiguration.Backend.none)

        // Web Push: on, to the browsers' services, unless said otherwise; a push gateway at another path (the homeserver
        // refuses it), a service that is no origin, and a contact that is neither mailto: nor https: are each refused.
        #expect(chat.push.enabled && chat.push.gatewayURL == nil && chat.push.services == PushServices(PushServices.browsers))
        let push = try loader([
            "g.json": #"{"# + base
                + #","chat":{"push":{"enabled":false,"gateway_url":"http://10.0.0.5:8080/_matrix/push/v1/notify","services":["https://push.example.org"],"contact":"mailto:ops@example.org"}}}"#
        ]).load(path: "g.json").registration.chat.push
        #expect(!push.enabled && push.gatewayURL == "http://10.0.0.5:8080/_matrix/push/v1/notify" && push.contact == "mailto:ops@example.org")
        #expect(push.services.allowed("https://push.example.org/x") != nil && push.services.allowed("https://fcm.googleapis.com/x") == nil)
        #expect(
            problems(#"{"# + base + #","chat":{"push":{"gateway_url":"https://gw.example.org/notify","services":["https://push.example.org/path"],"contact":"ops"}}}"#)
                == ["chat.push.gateway_url", "chat.push.services", "chat.push.contact"])
    }

    @Test func theLogSenderIsForDevelopmentOnly() {
        let keyPaths = problems(
            #"{"public_url":"https://a.example.org","oidc":{"issuer":"https://idp.example.org","client_id":"a"},"registration":{"code_sender":{"kind":"log"}}}"#
        )
        #expect(keyPaths == ["registration.code_sender.kind"])
    }

    /// JSON's `1` is a number and `true` a boolean, though both arrive as `NSNumber`.
    @Test func onesAreNumbersAndTruesAreBooleans() throws {
        let configuration = try loader([
            "g.json": #"{"listen": {"shutdown_grace_seconds": 1}, "development": {"enabled": true}, "metrics": {"enabled": true}}"#
        ]).load(path: "g.json")
        #expect(configuration.listen.shutdownGraceSeconds == 1)
        #expect(configuration.developmentMode)
        let keyPaths = problems(#"{"listen": {"shutdown_grace_seconds": true}, "metrics": {"enabled": 1}}"#, development: true)
        #expect(keyPaths.contains("listen.shutdown_grace_seconds") && keyPaths.contains("metrics.enabled"))
    }

    /// The shipped folders are found beside an installed binary and in the checkout a binary was built in, from any
    /// working folder.
    @Test func shippedFoldersAreFoundFromTheBinary() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-shipped-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let name = "Templates-\(UUID().uuidString)"
        let manager = FileManager.default
        // Installed: <prefix>/bin/gatehouse and <prefix>/share/gatehouse/<name>.
        try manager.createDirectory(at: root.appendingPathComponent("prefix/bin"), withIntermediateDirectories: true)
        try manager.createDirectory(at: root.appendingPathComponent("prefix/share/gatehouse/\(name)"), withIntermediateDirectories: true)
        let installed = ConfigurationLoader.shippedFolder(name, executable: root.appendingPathComponent("prefix/bin/gatehouse"))
        #expect(installed == root.appendingPathComponent("prefix/share/gatehouse/\(name)").resolvingSymlinksInPath().path)
        // Built in a checkout: <checkout>/.build/<triple>/debug/gatehouse beside <checkout>/Package.swift.
        let checkout = root.appendingPathComponent("checkout")
        try manager.createDirectory(at: checkout.appendingPathComponent(".build/x86_64/debug"), withIntermediateDirectories: true)
        try manager.createDirectory(at: checkout.appendingPathComponent(name), withIntermediateDirectories: true)
        try Data().write(to: checkout.appendingPathComponent("Package.swift"))
        let built = ConfigurationLoader.shippedFolder(name, executable: checkout.appendingPathComponent(".build/x86_64/debug/gatehouse"))
        #expect(built == checkout.appendingPathComponent(name).resolvingSymlinksInPath().path)
        // Nowhere: the plain name, for the missing-folder check to report.
        #expect(ConfigurationLoader.shippedFolder(name, executable: root.appendingPathComponent("elsewhere/gatehouse")) == name)
    }

    @Test func wrongTypesAreProblemsNotCrashes() {
        let keyPaths = problems(#"{"public_url": 5, "listen": {"port": "eighty"}, "cookie": {"secure": "yes"}, "oidc": {"scopes": "openid"}}"#)
        #expect(
            keyPaths.contains("public_url") && keyPaths.contains("listen.port") && keyPaths.contains("cookie.secure")
                && keyPaths.contains("oidc.scopes"))
    }

    /// The file and the environment through swift-configuration: each kind of problem once, with its key path and,
    /// for the environment, the variable and what it held; the environment's good values still win over the file.
    @Test func fileAndEnvironmentProblemsSayWhereTheyCameFrom() throws {
        let json = """
            {"public_url": "https://gate.example.org", "listen": {"port": 8443, "host": 5},
             "oidc": {"client_id": "a", "client_secret": "in-the-file", "unknown_nested": {"deeper": 1}},
             "registration": {"code_sender": {"kind": "http", "url": "https://sms.example.org/send"}}}
            """
        do {
            _ = try loader(
                ["g.json": json],
                environment: [
                    "GATEHOUSE_LISTEN_PORT": "eighty", "GATEHOUSE_COOKIE_SECURE": "maybe", "GATEHOUSE_OIDC_SCOPES": "openid, profile",
                    "LISTEN_PORT": "not ours",
                ]
            ).load(path: "g.json")
            Issue.record("a configuration with problems was accepted")
        } catch {
            let messages = error.problems.map { "\($0.keyPath): \($0.message)" }
            for expected in [
                "listen.port: must be a whole number, got \"eighty\" from GATEHOUSE_LISTEN_PORT",
                "listen.host: must be a string",
                "cookie.secure: must be true or false, got \"maybe\" from GATEHOUSE_COOKIE_SECURE",
                "oidc.client_secret: is a secret and is not read from the configuration file; set GATEHOUSE_OIDC_CLIENT_SECRET or GATEHOUSE_OIDC_CLIENT_SECRET_FILE",
                "oidc.unknown_nested.deeper: unknown key",
            ] {
                #expect(messages.contains(expected), "missing \(expected); got \(messages)")
            }
            #expect(error.problems.contains { $0.keyPath == "oidc.issuer" })  // required, and missing
            #expect(error.problems.count == 6, "\(messages)")
        }
        let configuration = try loader(
            [
                "g.json":
                    #"{"public_url": "https://gate.example.org", "oidc": {"issuer": "https://idp.example.org", "client_id": "a", "scopes": ["openid"]}, "registration": {"code_sender": {"kind": "http", "url": "https://sms.example.org/send"}}}"#
            ],
            environment: ["GATEHOUSE_OIDC_SCOPES": "openid, profile", "GATEHOUSE_METRICS_ENABLED": "no"]
        ).load(path: "g.json")
        #expect(configuration.oidc.scopes == ["openid", "profile"])
        #expect(configuration.metrics == nil)
    }

    /// Outside development mode the store's key is required, whole and of the right length; the configuration file
    /// may name its file, the environment give it; development mode keeps its own in the data folder.
    @Test func theStoreKeyIsRequiredAndChecked() throws {
        let json =
            #"{"public_url":"https://a.example.org","oidc":{"issuer":"https://idp.example.org","client_id":"a"},"registration":{"code_sender":{"kind":"http","url":"https://sms.example.org/send"}}}"#
        let bare = ConfigurationLoader(environment: [:], developmentDefaults: .standard) { path in
            guard let text = ["g.json": json][path] else { throw CocoaLikeMissingFile() }
            return text
        }
        #expect(throws: ConfigurationError.self) { try bare.load(path: "g.json") }
        #expect(problems(json, environment: ["GATEHOUSE_STORAGE_ENCRYPTION_KEY": "c2hvcnQ="]) == ["storage.encryption_key_file"])
        #expect(problems(json, environment: ["GATEHOUSE_STORAGE_ENCRYPTION_KEY": "not base64!"]) == ["storage.encryption_key_file"])
        let key = Data(repeating: 9, count: 32).base64EncodedString()
        let inFile = json.replacingOccurrences(of: #""public_url""#, with: #""storage":{"encryption_key_file":"/etc/g/storage.key"},"public_url""#)
        let configuration = try loader(["g.json": inFile, "/etc/g/storage.key": "# the sealing key first\n\(key)\n"]).load(path: "g.json")
        guard case .keyring(let keyring) = configuration.storage.keys else {
            Issue.record("the key file was not read")
            return
        }
        #expect(keyring.keys.count == 1)
        #expect(problems(inFile) == ["storage.encryption_key_file"])  // the file cannot be read
        let development = try ConfigurationLoader(environment: [:], developmentDefaults: .standard).load(path: nil, development: true)
        guard case .developmentFile(let path) = development.storage.keys else {
            Issue.record("development mode keeps no key of its own")
            return
        }
        #expect(path == "data/storage.key")
    }

    @Test func invalidJSONAndMissingFilesAreReported() {
        #expect(problems("{not json") == ["(file)"])
        #expect(throws: ConfigurationError.self) { try loader([:]).load(path: "missing.json") }
    }

    @Test func codesMustGoSomewhereOutsideDevelopment() {
        let base = #""public_url":"https://a.example.org","oidc":{"issuer":"https://idp.example.org","client_id":"a"}"#
        #expect(problems("{\(base)}") == ["registration.code_sender.kind"])
        #expect(problems(#"{\#(base),"registration":{"code_sender":{"kind":"http"}}}"#) == ["registration.code_sender.url"])
        #expect(problems(#"{\#(base),"registration":{"code_sender":{"kind":"http","url":"https://sms.example.org/v1"}}}"#).isEmpty)
        #expect(problems("{}", development: true).isEmpty)
    }

    @Test func developmentModeOnlyOnLoopback() {
        #expect(problems(#"{"public_url": "https://gate.example.org"}"#, development: true).contains("development.enabled"))
        #expect(problems("{}", development: true).isEmpty)
    }

    @Test func developmentDefaultsPointAtTheBuiltInProvider() throws {
        let configuration = try loader([:]).load(path: nil, development: true)
        #expect(configuration.oidc.issuer == "http://127.0.0.1:8080/dev-idp")
        #expect(configuration.oidc.clientID == DevelopmentAccounts.clientID)
        #expect(configuration.storage.sqlitePath == "data/gatehouse.sqlite")
    }
}
