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
        rules.decide(path: path, method: method, level: .sso, identity: member)
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
        #expect(Self.rules.decide(path: "/api/items", method: "POST", level: .registered, identity: Self.member) == .allowed)
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
        #expect(Self.rules.decide(path: "/team-only", method: "GET", level: .sso, identity: other) == .lacking(.claim("email")))
        let outsider = MemberIdentity(sub: "s3", email: "ann@example.org", groups: ["/other"])
        #expect(Self.rules.decide(path: "/team-only", method: "GET", level: .sso, identity: outsider) == .lacking(.group(["team"])))
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
}
