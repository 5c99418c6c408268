import Testing

@testable import GatehouseCore

@Suite struct ContentSecurityPolicyTests {
    static let gateway = ContentSecurityPolicy.gatewayDefault(
        allowlistedSources: ["https://*.example.org"], formActionSources: ["https://*.example.org"])

    func combined(_ upstream: [String], nonce: String? = "N") -> String {
        ContentSecurityPolicy.combined(
            gateway: Self.gateway, upstream: upstream, nonce: nonce, scriptURLs: ["https://gate/static/t.js", "https://gate/static/b.js"],
            styleURL: "https://gate/static/b.css")
    }

    @Test func gatewayPolicyAloneAllowsTheBarByNonce() {
        #expect(
            combined([])
                == "default-src 'self' https://*.example.org; object-src 'none'; base-uri 'self'; frame-ancestors 'self'; form-action 'self' https://*.example.org; script-src 'self' https://*.example.org 'nonce-N'; style-src 'self' https://*.example.org 'nonce-N'"
        )
        #expect(!combined([]).contains("unsafe-inline"))
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
