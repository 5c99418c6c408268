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
        #expect(ProxyDataPlane.cookie(named: "gatehouse_session", in: headers) == expected)
    }
}
