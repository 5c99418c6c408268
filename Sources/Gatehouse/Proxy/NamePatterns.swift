/// Names as an app's configuration gives them (`pass_headers`, `client_cookies`): exact, or with `*` for any run of
/// characters, for names that carry an id (`CSRF-Token-*` matches `CSRF-Token-ABCDE`).
struct NamePatterns: Sendable {
    private let exact: [String]
    /// Each pattern with a `*`, cut at its stars: a name starts with the first piece, ends with the last and holds the
    /// others in order between.
    private let globs: [[String]]

    /// `ignoresCase` for header names (which are then given lower-case), not for cookie names.
    init(_ patterns: some Sequence<String>, ignoresCase: Bool) {
        var exact: [String] = []
        var globs: [[String]] = []
        for pattern in patterns {
            let pattern = ignoresCase ? pattern.lowercased() : pattern
            if pattern.contains("*") {
                globs.append(pattern.split(separator: "*", omittingEmptySubsequences: false).map(String.init))
            } else if !exact.contains(pattern) {
                exact.append(pattern)
            }
        }
        self.exact = exact
        self.globs = globs
    }

    var isEmpty: Bool { exact.isEmpty && globs.isEmpty }

    /// Whether `name` is one of the names (a header name given lower-case), compared in place: asked of every header
    /// and cookie of a request, it makes no copy.
    func matches(_ name: some StringProtocol) -> Bool {
        exact.contains { $0.utf8.elementsEqual(name.utf8) } || globs.contains { Self.matches(name.utf8, $0) }
    }

    private static func matches(_ name: some Collection<UInt8>, _ pieces: [String]) -> Bool {
        guard let first = pieces.first, let last = pieces.last, name.starts(with: first.utf8) else { return false }
        var rest = name.dropFirst(first.utf8.count)
        for piece in pieces.dropFirst().dropLast() where !piece.isEmpty {
            guard let found = rest.firstRange(of: piece.utf8) else { return false }
            rest = rest[found.upperBound...]
        }
        return rest.count >= last.utf8.count && rest.suffix(last.utf8.count).elementsEqual(last.utf8)
    }

    /// The literal start of a pattern (before any `*`): what configuration checks judge it by.
    static func literalPrefix(_ pattern: String) -> String {
        String(pattern.prefix { $0 != "*" })
    }
}
