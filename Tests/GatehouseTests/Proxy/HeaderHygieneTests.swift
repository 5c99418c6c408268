import Foundation
import HTTPTypes
import Testing

@testable import Gatehouse

@Suite struct HeaderHygieneTests {
    @Test func connectionListedNamesAreReadWithTheirWhitespaceAndCaseAndUnderscores() {
        var fields = HTTPFields()
        fields.append(HTTPField(name: .connection, value: " keep-alive ,\tX-Secret\t, X_Other"))
        fields.append(HTTPField(name: .connection, value: "close"))
        // `keep-alive` is a hop-by-hop name, dropped whether listed or not: it is left out of the list.
        #expect(HeaderHygiene.connectionListed(fields) == ["x-secret", "x-other", "close"])
        #expect(HeaderHygiene.canonical("X_Forwarded_User") == "x-forwarded-user")
        #expect(HeaderHygiene.canonical("already-canonical") == "already-canonical")
    }

    @Test func responseHeadersDropWhatTheConnectionHeaderLists() {
        var fields = HTTPFields()
        fields.append(HTTPField(name: .connection, value: "X-Hop, keep-alive"))
        fields.append(HTTPField(name: HTTPField.Name("X-Hop")!, value: "1"))
        fields.append(HTTPField(name: HTTPField.Name("X-Kept")!, value: "2"))
        fields.append(HTTPField(name: .setCookie, value: "a=b"))
        let kept = HeaderHygiene.responseHeaders(from: fields)
        #expect(kept.map(\.name.canonicalName) == ["x-kept"])
    }

    @Test func namesAndPatternsAsConfigurationGivesThem() {
        let headers = NamePatterns(["X-CSRF-Token-*", "kbn-xsrf", "*-Org-Id", "A*B*C"], ignoresCase: true)
        for name in ["x-csrf-token-abc12", "x-csrf-token-z", "kbn-xsrf", "x-grafana-org-id", "abc", "a-b-c", "axxbyyc"] {
            #expect(headers.matches(name), "\(name)")
        }
        for name in ["x-csrf-token", "x-csrf-tokens-1", "kbn-xsrf-2", "org-id", "ab", "acb", "abcd"] { #expect(!headers.matches(name), "\(name)") }
        let cookies = NamePatterns(["CSRF-Token-*"], ignoresCase: false)
        #expect(cookies.matches("CSRF-Token-ABCDE") && !cookies.matches("csrf-token-abcde") && !NamePatterns([], ignoresCase: false).matches(""))
    }

    /// What `pass_headers` may name, and what an app's identity or assertion header may be called.
    @Test func configurationNamesAreCheckedAgainstWhatTheGatewayOwns() {
        for passable in ["X-App", "X-CSRF-Token-*", "kbn-xsrf", "X-*"] {
            #expect(HeaderHygiene.problem(passing: passable, identityNames: ["X-Webauth-User"]) == nil, "\(passable)")
        }
        for refused in [
            "Cookie", "host", "Authorization", "X-Forwarded-For", "X-Forwarded-*", "X_Forwarded_User", "Remote-User", "remote_*", "X-Real-IP",
            "CF-Connecting-IP", "X-Original-URL", "X-Webauth-User", "x-webauth-user", "Connection", "a b",
        ] {
            #expect(HeaderHygiene.problem(passing: refused, identityNames: ["X-Webauth-User"]) != nil, "\(refused)")
        }
        // Identity families are what an app's identity settings name; the hop and the gateway's forwarding are not.
        for settable in ["X-Webauth-User", "X-Pomerium-Jwt-Assertion", "Remote-User", "X-Gatehouse-Assertion"] {
            #expect(HeaderHygiene.problem(setting: settable) == nil, "\(settable)")
        }
        for refused in ["X-Forwarded-For", "Forwarded", "Host", "Transfer-Encoding", "Authorization"] {
            #expect(HeaderHygiene.problem(setting: refused) != nil, "\(refused)")
        }
    }

    /// The debug log's list when an app refuses a request: what the gateway held back, not what it always replaces.
    @Test func removedNamesAreWhatTheAppDidNotGet() throws {
        var fields = HTTPFields()
        for (name, value) in [("Cookie", "a=b"), ("Host", "x"), ("X-Webauth-User", "admin"), ("X-App", "1"), ("Accept", "*/*"), ("X_Odd", "1")] {
            fields.append(HTTPField(name: try #require(HTTPField.Name(name)), value: value))
        }
        let url = try #require(URL(string: "https://gate.example.org"))
        let pass = HeaderHygiene.Rules(AppHeaderConfiguration(), publicURL: url)
        #expect(HeaderHygiene.removedNames(from: fields, for: pass) == ["X-Webauth-User", "X_Odd"])
        let strict = HeaderHygiene.Rules(AppHeaderConfiguration(strictRequestHeaders: true), publicURL: url)
        #expect(HeaderHygiene.removedNames(from: fields, for: strict) == ["X-Webauth-User", "X-App", "X_Odd"])
    }
}
