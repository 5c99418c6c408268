import Foundation
import GatehouseCore
import Testing

@testable import Gatehouse

/// The rate limits over real sockets: reached, answered with `429` and `Retry-After` (a page, or JSON for API callers),
/// released, and never shared between two addresses or two members. The gateway trusts loopback as its load balancer
/// here, so that each test can speak from several client addresses through `X-Forwarded-For`.
@Suite struct RateLimitFlowTests {
    static func behindBalancer(_ configuration: inout GatehouseConfiguration) {
        configuration.listen.trustedProxies = ["127.0.0.0/8", "::1"]
    }

    static func from(_ address: String, json: Bool = false) -> [(String, String)] {
        [("X-Forwarded-For", address)] + (json ? [("Accept", "application/json")] : [])
    }

    @Test func signInStartsAreLimitedPerClientAddressThenReleased() async throws {
        try await LiveGateway.run(configure: {
            Self.behindBalancer(&$0)
            // One start back every 3 s: slow enough that a loaded machine still asks within the wait.
            $0.rateLimits.signInStarts = RateLimitRule(limit: 2, periodSeconds: 6)
        }) { gateway in
            let start = "/signin/start?return_to=%2Fchats"
            for _ in 0..<2 { #expect(try await gateway.get(start, cookies: [:], headers: Self.from("203.0.113.5")).status == 303) }

            let page = try await gateway.get(start, cookies: [:], headers: Self.from("203.0.113.5"))
            #expect(page.status == 429)
            // The wait is what is left of the next start's 3 s: less on a machine slow enough to take a second or two
            // here (a loaded CI machine took more than one), never none and never the whole period.
            let wait = try #require(page.headers.first(name: "Retry-After"))
            #expect(["1", "2", "3"].contains(wait))
            #expect(page.body.contains("Too many attempts") && page.body.contains("wait \(wait) seconds"))
            #expect(page.body.contains(#"href="/signin/start?return_to=%2Fchats""#))  // the retry link
            let json = try await gateway.get(start, cookies: [:], headers: Self.from("203.0.113.5", json: true))
            #expect(json.status == 429 && ["1", "2", "3"].contains(json.headers.first(name: "Retry-After")))
            let answer = try #require(try JSONSerialization.jsonObject(with: Data(json.body.utf8)) as? [String: String])
            #expect(answer["error"] == "rate_limited" && answer["message"]?.contains(" seconds") == true && answer["request_id"] != nil)

            // A hop the client wrote itself, before the balancer's, changes nothing.
            #expect(try await gateway.get(start, cookies: [:], headers: Self.from("198.51.100.77, 203.0.113.5")).status == 429)
            // Another address is not locked out by this one; nor is a member behind another /64.
            #expect(try await gateway.get(start, cookies: [:], headers: Self.from("203.0.113.6")).status == 303)
            #expect(try await gateway.get(start, cookies: [:], headers: Self.from("2001:db8:1:2::5")).status == 303)

            try await Task.sleep(for: .milliseconds(3100))
            #expect(try await gateway.get(start, cookies: [:], headers: Self.from("203.0.113.5")).status == 303)

            let samples = MetricsTests.samples(gateway.built.metrics.exposition())
            #expect(samples[#"gatehouse_rate_limited_total{limit="sign_in_start"}"#] == 3)
        }
    }

    @Test func aLimitedCallbackLosesNothingAndSignsInOnceTheWaitIsOver() async throws {
        // A window of 5 s: the forged callback and the member's must fall into one even on a loaded machine.
        try await LiveGateway.run(configure: { $0.rateLimits.callbacks = RateLimitRule(limit: 1, periodSeconds: 5) }) { gateway in
            let start = try await gateway.get("/signin/start", cookies: [:])
            var cookies = BrowserCookies()
            cookies.absorb(start)
            let authorize = try #require(start.location)
            let form = SignInFlowTests.decision(authorize, account: "alice", password: gateway.built.developmentPassword!)
            let callback = try #require(try await gateway.post("/dev-idp/authorize", form: form, cookies: [:]).location)

            // Somebody else's noise from the same address uses up the allowance…
            #expect(try await gateway.get("/auth/callback?state=forged&code=x", cookies: [:]).location?.hasPrefix("/signin?error=") == true)
            let limited = try await gateway.get(callback, cookies: cookies.values)
            let wait = try #require(limited.headers.first(name: "Retry-After").flatMap { Int($0) })
            #expect(limited.status == 429 && (1...5).contains(wait))
            // …but the member's sign-in is still there once the wait is over.
            try await Task.sleep(for: .milliseconds(wait * 1000 + 100))
            let reply = try await gateway.get(callback, cookies: cookies.values)
            #expect(reply.status == 303 && reply.location == "/")
            #expect(reply.setCookies.contains { $0.hasPrefix("gatehouse_session=") })
        }
    }

    @Test func usernameChecksAreLimitedPerMemberAndTheFormKeepsWhatWasTyped() async throws {
        try await UpgradeFlowTests.live(configure: { $0.rateLimits.usernameChecks = RateLimitRule(limit: 2, periodSeconds: 60) }) { gateway in
            let alice = try await UpgradeFlowTests.Member.signIn(gateway, as: "alice")
            _ = try await alice.get("/upgrade?from=portal")
            #expect(try await alice.post(Paths.upgrade(.phone), [("phone", "+15550100001")]).location == Paths.upgrade(.code))
            #expect(try await alice.post(Paths.upgrade(.code), [("code", try await alice.inboxCode())]).location == Paths.upgrade(.username))

            let check = Paths.upgradeUsernameCheck + "?username="
            for name in ["alice_a", "alice_b"] { #expect(try await alice.get(check + name, json: true).status == 200) }
            let refused = try await alice.get(check + "alice_c", json: true)
            #expect(refused.status == 429 && Int(refused.headers.first(name: "Retry-After") ?? "") ?? 0 > 25)
            #expect(refused.body.contains(#""error":"rate_limited""#))
            // What the rules alone answer needs no lookup and counts nothing.
            #expect(try await alice.get(check + "ab", json: true).body.contains(#""reason":"tooShort""#))

            // The form says the same beside the field and keeps the name as typed.
            let form = try await alice.post(Paths.upgrade(.username), [("username", "alice_final")])
            #expect(form.status == 429 && form.headers.first(name: "Retry-After") != nil)
            #expect(form.body.contains(#"value="alice_final""#) && form.body.contains("too many attempts"))

            // Another member's checks are their own.
            let bob = try await UpgradeFlowTests.Member.signIn(gateway, as: "bob")
            _ = try await bob.get("/upgrade?from=portal")
            #expect(try await bob.post(Paths.upgrade(.phone), [("phone", "+15550100002")]).location == Paths.upgrade(.code))
            #expect(try await bob.post(Paths.upgrade(.code), [("code", try await bob.inboxCode())]).location == Paths.upgrade(.username))
            #expect(try await bob.get(check + "bob_a", json: true).status == 200)
        }
    }
}
