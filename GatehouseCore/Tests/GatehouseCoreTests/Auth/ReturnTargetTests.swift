import Testing

@testable import GatehouseCore

@Suite struct ReturnTargetTests {
    @Test(arguments: [
        "/", "/chats", "/apps/wiki/page?x=1&y=2", "/apps/wiki/a%20b", "/a/b.c/d", "/x#frag", "/apps-open/spa?state=s&to=%2Fecho%2Fx", "/a/...",
        "/.well-known/x", "/a./b", "/x?to=/../y", "/x?next=https://other.example/", "/a:b/c", "/x?q=%41%7e", "/a%3ab",
    ])
    func acceptsSameOriginPaths(_ candidate: String) {
        #expect(ReturnTarget(candidate)?.path == candidate)
    }

    @Test(arguments: [
        "", "chats", "https://evil.example/", "http://evil.example", "//evil.example", "//evil.example/path",
        "/\\evil.example", "\\\\evil.example", "/\\/evil.example", "/%2f%2fevil.example", "/%2F%2Fevil.example",
        "/%5cevil.example", "/apps/%2e%2e/secret", "/../etc/passwd", "/apps/../admin", "/./x", "/a\u{0}b", "/a\r\nSet-Cookie: x=y",
        "/a\tb", "/a b", "/%0d%0aLocation:%20https://evil", "/%2e%2e?x=1", "/%09/evil.example", "javascript:alert(1)", " /chats",
        "/café", "/%252f%252fevil", "/apps/..", "/apps/.", "/a/./", "/..", "/.", "/a//../b", "/a/..?x", "/\u{202e}evil",
        "\u{ff0f}\u{ff0f}evil.example",
        // Decoded, as whatever reads the target next may: control characters anywhere, a scheme before `//`.
        "/%01", "/a%1fb", "/a%7F", "/x?y=%01", "/x?y=%0a", "/x?y=%0D%0ASet-Cookie:%20a=b", "/https://evil.example",
        "/apps/x/https://evil.example", "/https%3a//evil.example", "/https%3A//evil.example", "/javascript://%0aalert(1)",
    ])
    func rejectsHostileTargets(_ candidate: String) {
        #expect(ReturnTarget(candidate) == nil)
    }

    @Test func rejectsOverlongTargets() {
        #expect(ReturnTarget("/" + String(repeating: "a", count: ReturnTarget.maximumLength)) == nil)
    }
}
