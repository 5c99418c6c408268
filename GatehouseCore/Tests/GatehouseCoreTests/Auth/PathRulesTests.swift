import Foundation
import Testing

@testable import GatehouseCore

@Suite struct PathRulesTests {
    static let member = MemberIdentity(sub: "s1", email: "ann@example.org", preferredUsername: "ann", roles: ["staff"], groups: ["/team"])

    /// `/admin/*` denied, `/reports/*` for the `auditor` role, `POST /api/*` for registered members, the rest open.
    static let rules = PathRules([
        .init(paths: ["/admin/*"], action: .deny),
        .init(paths: ["/reports/*"], require: .init(roles: ["auditor"])),
        .init(paths: ["/api/*"], methods: ["post", "DELETE"], require: .init(level: .registered)),
        .init(paths: ["/team-only"], require: .init(groups: ["team"], claims: ["email": ["ann@example.org"]])),
    ])

    static func verdict(_ path: String, _ method: String = "GET", rules: PathRules = rules) -> PathRules.Verdict {
        decide(rules, path, method, level: .sso, identity: member)
    }

    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    static func session(level: AuthLevel, identity: MemberIdentity = member, assurance: Assurance? = nil) -> Session {
        var session = Session(
            id: "id", identity: identity, tokens: TokenSet(idToken: "", accessToken: "", refreshToken: nil, accessTokenExpiresAt: nil),
            level: level, csrfToken: "", createdAt: now.addingTimeInterval(-3600), lastSeenAt: now, expiresAt: now.addingTimeInterval(3600))
        session.assurance = assurance
        return session
    }

    static func decide(
        _ rules: PathRules, _ path: String, _ method: String = "GET", level: AuthLevel, identity: MemberIdentity = member, assurance: Assurance? = nil,
        client: String? = "192.0.2.10", freshness: Bool = true
    ) -> PathRules.Verdict {
        rules.decide(
            path: path, method: method, session: session(level: level, identity: identity, assurance: assurance),
            at: AccessMoment(now: now, client: client.flatMap(IPAddress.init), checksFreshness: freshness))
    }

    /// Every spelling of a denied path is denied: escapes (once or twice), dot segments, repeated slashes, backslashes,
    /// `;` parameters, a query or fragment.
    @Test(arguments: [
        "/admin", "/admin/", "/admin/users", "//admin/users", "/admin//users", "/%61dmin/users", "/%2561dmin/users", "/x/../admin",
        "/x/%2e%2e/admin", "/x/%252e%252e/admin", "/./admin", "/admin;jsessionid=1/users", "/admin%3Bx/users", "/x%2F..%2Fadmin",
        "/x\\..\\admin", "/x%5C..%5Cadmin", "/admin?/public", "/admin#/public", "/reports/../admin/x",
    ])
    func hostileSpellingsOfADeniedPathAreDenied(path: String) {
        #expect(Self.verdict(path) == .denied, "\(path)")
    }

    @Test(arguments: [
        ("/adminx", PathRules.Verdict.noRule), ("/public/admin", .noRule), ("/", .noRule), ("/admin.html", .noRule),
        ("/reports/q3", .lacking(.role("auditor"))), ("/reports", .lacking(.role("auditor"))), ("/REPORTS/q3", .noRule),
        ("/api/items", .noRule), ("/team-only", .allowed), ("/team-only/", .allowed),
    ])
    func pathsOutsideARuleOrMeetingItAreDecidedByTheApp(path: String, expected: PathRules.Verdict) {
        #expect(Self.verdict(path) == expected, "\(path)")
    }

    @Test func methodsNarrowARuleAndTheFirstMatchDecides() {
        #expect(Self.verdict("/api/items", "POST") == .lacking(.level(.registered)))
        #expect(Self.verdict("/api/items", "delete") == .lacking(.level(.registered)))
        #expect(Self.verdict("/api/items", "GET") == .noRule)
        #expect(Self.decide(Self.rules, "/api/items", "POST", level: .registered) == .allowed)
        // The first match wins: an allow before a broader deny opens a hole on purpose, the reverse does not.
        let ordered = PathRules([.init(paths: ["/admin/health"]), .init(paths: ["/admin/*"], action: .deny)])
        #expect(Self.verdict("/admin/health", rules: ordered) == .allowed)
        #expect(Self.verdict("/admin/health/../users", rules: ordered) == .denied)
        #expect(Self.verdict("/admin/health;x", rules: ordered) == .allowed)
    }

    @Test func anAppThatIgnoresCaseHasItsRulesIgnoreItToo() {
        let rules = PathRules([.init(paths: [PathRules.normalizePattern("/Admin/*", caseInsensitive: true)!], action: .deny)], caseInsensitive: true)
        for path in ["/admin/x", "/ADMIN/x", "/%41dmin/x", "/aDmIn"] { #expect(Self.verdict(path, rules: rules) == .denied, "\(path)") }
    }

    @Test func groupsAndClaimsAreNamedWhenLacking() {
        let other = MemberIdentity(sub: "s2", email: "bob@example.org", groups: ["team"])
        #expect(Self.decide(Self.rules, "/team-only", level: .sso, identity: other) == .lacking(.claim("email")))
        let outsider = MemberIdentity(sub: "s3", email: "ann@example.org", groups: ["/other"])
        #expect(Self.decide(Self.rules, "/team-only", level: .sso, identity: outsider) == .lacking(.group(["team"])))
    }

    @Test(arguments: ["/bad%zzescape", "/nul%00byte", "/%C0%AE%C0%AE/admin"])
    func unreadablePathsAreRefusedWhenTheAppHasRules(path: String) {
        #expect(Self.verdict(path) == .unreadable, "\(path)")
        #expect(Self.verdict(path, rules: PathRules()) == .noRule)
    }

    @Test func patternsAreCheckedAndNormalizedOnce() {
        #expect(PathRules.normalizePattern("/admin/*", caseInsensitive: false) == "/admin/*")
        #expect(PathRules.normalizePattern("//a/./b/", caseInsensitive: false) == "/a/b")
        #expect(PathRules.normalizePattern("/*", caseInsensitive: false) == "/*")
        #expect(PathRules.normalizePattern("/a*b", caseInsensitive: false) == nil)
        #expect(PathRules.normalizePattern("admin", caseInsensitive: false) == nil)
    }

    /// `/payroll/*` wants a sign-in within 5 minutes at level `gold`; `/vault/*` the PIN within a minute; `/office/*`
    /// the office's networks.
    static let stepUpRules = PathRules([
        .init(paths: ["/payroll/*"], require: .init(authAgeSeconds: 300, acr: ["gold", "platinum"])),
        .init(paths: ["/vault/*"], require: .init(pinAgeSeconds: 60)),
        .init(paths: ["/office/*"], require: .init(networks: [IPNetwork("10.0.0.0/8")!, IPNetwork("2001:db8::/32")!])),
    ])

    @Test func aRecentSignInIsTheTimeOfTheLastAuthenticationAgainstTheRulesAge() {
        let recent = Assurance(authenticatedAt: Self.now.addingTimeInterval(-300), acr: "gold")
        #expect(Self.decide(Self.stepUpRules, "/payroll/slips", level: .sso, assurance: recent) == .allowed)
        let stale = Assurance(authenticatedAt: Self.now.addingTimeInterval(-301), acr: "gold")
        #expect(Self.decide(Self.stepUpRules, "/payroll/slips", level: .sso, assurance: stale) == .lacking(.recentSignIn(.init(maxAge: 300))))
        // A provider that never said when: as stale as can be.
        #expect(
            Self.decide(Self.stepUpRules, "/payroll", level: .sso, assurance: Assurance(acr: "gold"))
                == .lacking(.recentSignIn(.init(maxAge: 300))))
        // Recent enough, of a class the rule does not name (or none): the classes are asked for, not the age.
        let silver = Assurance(authenticatedAt: Self.now, acr: "silver")
        #expect(Self.decide(Self.stepUpRules, "/payroll", level: .sso, assurance: silver) == .lacking(.recentSignIn(.init(maxAge: nil, acr: ["gold", "platinum"]))))
        #expect(
            Self.decide(Self.stepUpRules, "/payroll", level: .sso, assurance: nil)
                == .lacking(.recentSignIn(.init(maxAge: 300, acr: ["gold", "platinum"]))))
        // A held WebSocket is judged without the clock.
        #expect(Self.decide(Self.stepUpRules, "/payroll/live", level: .sso, assurance: stale, freshness: false) == .allowed)
    }

    @Test func thePINIsAskedOfRegisteredMembersAndASignInOfTheRest() {
        let entered = Assurance(authenticatedAt: Self.now.addingTimeInterval(-3000), pinVerifiedAt: Self.now.addingTimeInterval(-60))
        #expect(Self.decide(Self.stepUpRules, "/vault/keys", level: .registered, assurance: entered) == .allowed)
        let long = Assurance(authenticatedAt: Self.now, pinVerifiedAt: Self.now.addingTimeInterval(-61))
        #expect(Self.decide(Self.stepUpRules, "/vault/keys", level: .registered, assurance: long) == .lacking(.pin(60)))
        // At `sso` there is no PIN to enter: a sign-in as recent stands for it.
        #expect(Self.decide(Self.stepUpRules, "/vault/keys", level: .sso, assurance: long) == .allowed)
        let old = Assurance(authenticatedAt: Self.now.addingTimeInterval(-61))
        #expect(Self.decide(Self.stepUpRules, "/vault/keys", level: .sso, assurance: old) == .lacking(.recentSignIn(.init(maxAge: 60))))
    }

    @Test(arguments: [
        ("10.1.2.3", true), ("10.255.255.255", true), ("11.0.0.1", false), ("::ffff:10.9.9.9", true), ("2001:db8::1", true),
        ("2001:db9::1", false), ("not-an-address", false),
    ])
    func networksAreTheClientsAddressInABlock(client: String, inside: Bool) {
        let verdict = Self.decide(Self.stepUpRules, "/office/desk", level: .sso, client: client)
        #expect(verdict == (inside ? .allowed : .lacking(.network)), "\(client)")
        #expect(Self.decide(Self.stepUpRules, "/office/desk", level: .sso, client: nil) == .lacking(.network))
    }

    @Test func whatNoSignInChangesIsNamedBeforeAStepUp() {
        let rules = PathRules([.init(paths: ["/*"], require: .init(roles: ["hr"], networks: [IPNetwork("10.0.0.0/8")!], authAgeSeconds: 5))])
        #expect(Self.decide(rules, "/x", level: .sso) == .lacking(.role("hr")))
        let hr = MemberIdentity(sub: "s1", roles: ["hr"])
        #expect(Self.decide(rules, "/x", level: .sso, identity: hr) == .lacking(.network))
        #expect(Self.decide(rules, "/x", level: .sso, identity: hr, client: "10.0.0.1") == .lacking(.recentSignIn(.init(maxAge: 5))))
    }
}
