import Testing

@testable import GatehouseCore

/// The byte-level helpers the request path uses instead of Foundation's string functions.
@Suite struct BytesTests {
    @Test(arguments: [
        ("text/html,application/xhtml+xml", "text/html", true), ("application/json", "text/html", false), ("", "a", false),
        ("abc", "", true), ("aab", "ab", true), ("ab", "abc", false), ("2001:db8::1", ":", true), ("192.0.2.1", ":", false),
        ("a\0b", "\0", true), ("TEXT/HTML", "text/html", false), ("tex text/htm", "text/html", false), ("é&", "&", true),
    ])
    func containsBytesFindsTheNeedleByteForByte(text: String, needle: String, found: Bool) {
        #expect(text.containsBytes(of: needle) == found)
        #expect(text[...].containsBytes(of: needle) == found)
    }

    @Test(arguments: [(" \t a b \t", "a b"), ("", ""), (" \t ", ""), ("x", "x"), ("\u{A0}x", "\u{A0}x")])
    func optionalWhitespaceIsTrimmedAsBytes(text: String, trimmed: String) {
        #expect(text.trimmingOptionalWhitespace == trimmed)
    }
}
