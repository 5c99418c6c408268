import Testing

@testable import GatehouseCore

@Suite struct ContentSecurityPolicyTests {
    static let gateway = ContentSecurityPolicy.gatewayDefault(
        allowlistedSources: ["https://*.example.org"], formActionSources: ["https://*.example.org"])

    func combined(_ upstream: [String], nonce: String? = "N") -> String {
        ContentSecurityPolicy.combined(
            gateway: Self.gateway, upstream: upstream, nonce: nonce, scriptURLs: ["https://gate/static/t.js", "https://gate/static/b.js"],
            styleURLs: ["https://gate/static/b.css"])
    }

    /// An app without a policy of its own runs as it would directly (its inline scripts and styles, `eval`): the
    /// gateway's policy never carries a nonce or a hash, which would switch its `'unsafe-inline'` off.
    @Test func gatewayPolicyAloneLeavesInlineScriptsToTheApp() {
        #expect(
            combined([])
                == "default-src 'self' https://*.example.org data: blob: 'unsafe-inline' 'unsafe-eval'; object-src 'none'; base-uri 'self'; frame-ancestors 'self'; form-action 'self' https://*.example.org; script-src 'self' https://*.example.org data: blob: 'unsafe-inline' 'unsafe-eval' https://gate/static/t.js https://gate/static/b.js; style-src 'self' https://*.example.org data: blob: 'unsafe-inline' 'unsafe-eval' https://gate/static/b.css"
        )
        #expect(!combined([]).contains("nonce-") && !combined([]).contains("'sha"))
    }

    @Test func withoutTheGatewaysPolicyOnlyTheAppsIsSent() {
        let value = ContentSecurityPolicy.combined(
            gateway: nil, upstream: ["script-src 'self'"], nonce: "N", scriptURLs: ["https://gate/b.js"], styleURLs: ["https://gate/b.css"])
        #expect(value == "script-src 'self' 'nonce-N'")
        #expect(ContentSecurityPolicy.combined(gateway: nil, upstream: [], nonce: "N", scriptURLs: [], styleURLs: [""]).isEmpty)
    }

    @Test func upstreamPoliciesAreKeptAndEnforcedTogether() {
        let value = combined(["default-src 'none'; img-src https://cdn.example.org", "frame-ancestors 'none'"])
        let policies = value.components(separatedBy: ", ")
        #expect(policies.count == 3)  // one header, three policies: the browser enforces every one
        #expect(policies[1] == "default-src 'none'; img-src https://cdn.example.org; script-src 'nonce-N'; style-src 'nonce-N'")
        #expect(policies[2] == "frame-ancestors 'none'")
    }

    @Test func aNonceNeverSwitchesOffTheUpstreamsUnsafeInline() {
        let value = combined(["script-src 'self' 'unsafe-inline'"])
        #expect(value.hasSuffix("script-src 'self' 'unsafe-inline' https://gate/static/t.js https://gate/static/b.js"))
        let withNonce = combined(["script-src 'unsafe-inline' 'nonce-theirs'"])
        #expect(withNonce.hasSuffix("script-src 'unsafe-inline' 'nonce-theirs' 'nonce-N'"))
    }

    @Test func withoutABarNothingIsAdded() {
        #expect(combined(["script-src 'self'"], nonce: nil).hasSuffix(", script-src 'self'"))
    }

    @Test func parsingIgnoresRepeatsAndEmptyParts() {
        let policy = ContentSecurityPolicy(parsing: " script-src a ;; SCRIPT-SRC b; img-src  c ")
        #expect(policy.description == "script-src a; img-src c")
    }
}
