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
}
