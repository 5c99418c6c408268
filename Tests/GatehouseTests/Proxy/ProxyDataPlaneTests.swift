import GatehouseDataPlane
import NIOHTTP1
import Testing

@testable import Gatehouse

/// What the data plane reads from a request head before anything else: the session cookie, among the browser's
/// other cookies and hostile look-alikes.
@Suite struct ProxyDataPlaneTests {
    @Test(
        arguments: [
            (["Cookie: gatehouse_session=abc"], "abc"),
            (["cookie: a=1; gatehouse_session=abc; b=2"], "abc"),
            (["COOKIE: a=1;gatehouse_session=abc"], "abc"),
            (["Cookie: a=1", "Cookie: gatehouse_session=second"], "second"),
            (["Cookie: gatehouse_session=first; gatehouse_session=second"], "first"),
            (["Cookie: gatehouse_session="], ""),
            (["Cookie: gatehouse_session=a=b"], "a=b"),
            (["Cookie: xgatehouse_session=abc; gatehouse_sessionx=def"], nil),
            (["Cookie: gatehouse_session"], nil),
            (["X-Cookie: gatehouse_session=abc", "Cookies: gatehouse_session=abc"], nil),
            (["Cookie: ;;; ; gatehouse_session=abc;"], "abc"),
            ([String](), nil),
        ] as [([String], String?)])
    func theSessionCookieIsFoundAmongTheOthers(fields: [String], expected: String?) {
        let headers = HTTPHeaders(
            fields.map { field in
                let colon = field.firstIndex(of: ":")!
                return (String(field[..<colon]), String(field[field.index(colon, offsetBy: 2)...]))
            })
        // The head as the data plane reads it: the fields as ranges into the request's bytes.
        let head = RequestHead(HTTPRequestHead(version: .http1_1, method: .GET, uri: "/", headers: headers))
        #expect(head.cookie(named: "gatehouse_session") == expected)
    }

    /// A `.` or `..` segment, however spelled, would leave the app's base path upstream; dots inside names and in
    /// the query are fine.
    @Test(arguments: [
        ("/..", true), ("/.", true), ("/a/../b", true), ("/a/./b", true), ("/a/..", true), ("/%2e%2e/x", true), ("/%2E%2e/x", true),
        ("/.%2e/x", true), ("/a%2f..%2fb", true), ("/a%2F..", true), ("/a\\..\\b", true), ("/a%5c..%5cb", true), ("/a/..?x=1", true),
        ("/a/%2e", true), ("//..//", true),
        ("/", false), ("/a..b", false), ("/...", false), ("/a.", false), ("/.well-known/x", false), ("/x?to=/../y", false),
        ("/%2e%2e%2e", false), ("/a%2", false), ("/a%2?e", false), ("/%", false), ("/%2ex", false), ("", false),
    ])
    func dotSegmentsAreFoundHoweverSpelled(rest: String, hasDot: Bool) {
        #expect(AppAccess.hasDotSegment(rest) == hasDot, "\(rest)")
    }
}
