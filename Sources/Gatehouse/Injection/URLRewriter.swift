import Foundation

/// Maps upstream URLs to gateway URLs for path-mounted apps: `https://wiki.example.org/base/x` and, inside the wiki,
/// `/base/x` become `/apps/wiki/x`. Relative URLs, fragments and other schemes stay as they are.
public struct URLRewriter: Sendable, Equatable {
    public struct Mount: Sendable, Equatable {
        /// `/apps/<slug>`, without a trailing slash.
        public var prefix: String
        /// `scheme://host[:port]`, lower-case.
        public var origin: String
        /// The upstream path the app lives under, ending with `/`.
        public var basePath: String

        public init(prefix: String, upstream: URL) {
            self.prefix = prefix
            self.origin = URLRewriter.origin(of: upstream) ?? ""
            let path = upstream.path(percentEncoded: true)
            self.basePath = path.hasSuffix("/") ? path : path + "/"
        }

        /// The gateway path for an upstream path (with query and fragment), or `nil` outside `basePath`.
        func gatewayPath(forUpstreamPath path: String) -> String? {
            if path.hasPrefix(basePath) { return prefix + "/" + path.dropFirst(basePath.count) }
            let bare = String(basePath.dropLast())
            if path == bare || path.hasPrefix(bare + "?") || path.hasPrefix(bare + "#") { return prefix + "/" + path.dropFirst(bare.count) }
            return nil
        }
    }

    public let current: Mount
    public let all: [Mount]

    public init(current: Mount, all: [Mount]) {
        self.current = current
        self.all = all
    }

    static func origin(of url: URL) -> String? {
        guard let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased() else { return nil }
        let defaultPort = scheme == "https" ? 443 : 80
        return "\(scheme)://\(host)" + (url.port.map { $0 == defaultPort ? "" : ":\($0)" } ?? "")
    }

    /// The gateway URL for `value`, or `nil` when it is not a URL of a mounted app.
    public func rewrite(_ value: String) -> String? {
        if value.hasPrefix("//") {
            let scheme = current.origin.hasPrefix("https") ? "https:" : "http:"
            return rewriteAbsolute(scheme + value)
        }
        if value.hasPrefix("/") { return rewriteAbsolute(current.origin + value) }
        let lowered = value.lowercased()
        if lowered.hasPrefix("http://") || lowered.hasPrefix("https://") { return rewriteAbsolute(value) }
        return nil
    }

    /// An absolute URL of any mounted app.
    public func rewriteAbsolute(_ value: String) -> String? {
        guard let url = URL(string: value), let origin = Self.origin(of: url) else { return nil }
        var path = url.path(percentEncoded: true)
        if path.isEmpty { path = "/" }
        if let query = url.query(percentEncoded: true) { path += "?" + query }
        if let fragment = url.fragment(percentEncoded: true) { path += "#" + fragment }
        for mount in [current] + all where mount.origin == origin {
            if let mapped = mount.gatewayPath(forUpstreamPath: path) { return mapped }
        }
        return nil
    }

    /// `srcset`: comma-separated candidates of a URL and an optional descriptor.
    public func rewriteSourceSet(_ value: String) -> String {
        value.split(separator: ",", omittingEmptySubsequences: false).map { candidate in
            let text = String(candidate)
            let leading = text.prefix { $0 == " " || $0 == "\t" || $0 == "\n" }
            let rest = text.dropFirst(leading.count)
            let url = rest.prefix { !($0 == " " || $0 == "\t" || $0 == "\n") }
            let descriptor = rest.dropFirst(url.count)
            return leading + (rewrite(String(url)) ?? String(url)) + descriptor
        }.joined(separator: ",")
    }

    /// Where a navigation target (`Location`, `Refresh`, `Link`, a meta refresh) leads through the gateway: URLs of
    /// mounted apps become gateway URLs, relative references stay as they are; `nil` for anything that would leave
    /// the gateway (another host, another scheme, an upstream path outside every app).
    public func navigationTarget(_ value: String) -> String? {
        // Browsers drop tabs and newlines anywhere in a URL and spaces and control characters around it.
        let cleaned = String(value.unicodeScalars.filter { $0 != "\t" && $0 != "\n" && $0 != "\r" })
            .trimmingCharacters(in: CharacterSet.whitespaces.union(.controlCharacters))
        if let mapped = rewrite(cleaned) { return mapped }
        if cleaned.hasPrefix("/") || cleaned.hasPrefix("\\") || Self.hasScheme(cleaned) { return nil }
        return cleaned
    }

    /// `scheme:` at the start (RFC 3986 §3.1), as a browser would read it.
    static func hasScheme(_ value: String) -> Bool {
        guard let colon = value.firstIndex(of: ":") else { return false }
        let scheme = value[..<colon]
        guard let first = scheme.first, first.isASCII, first.isLetter else { return false }
        return scheme.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "+" || $0 == "-" || $0 == ".") }
    }

    /// `Refresh: 5; url=/next` (header or meta refresh) with its URL mapped, or `nil` when the URL would leave the
    /// gateway. A plain reload (`Refresh: 5`) stays as it is.
    public func rewriteRefresh(_ value: String) -> String? {
        guard let separator = value.firstIndex(where: { $0 == ";" || $0 == "," }) else {
            // No URL part; anything but a number would be a URL without `url=`, which browsers accept too.
            return value.trimmingCharacters(in: .whitespaces).allSatisfy { $0.isNumber || $0 == "." } ? value : nil
        }
        var rest = value[value.index(after: separator)...].drop { $0 == " " || $0 == "\t" }
        if rest.lowercased().hasPrefix("url") {
            let afterName = rest.dropFirst(3).drop { $0 == " " }
            if afterName.first == "=" { rest = afterName.dropFirst().drop { $0 == " " } }
        }
        var target = rest
        if let quote = target.first, quote == "'" || quote == "\"" {
            target = target.dropFirst()
            if let end = target.firstIndex(of: quote) { target = target[..<end] }
        }
        guard let mapped = navigationTarget(String(target)) else { return nil }
        // Everything around the URL stays as the upstream wrote it.
        return value[..<target.startIndex] + mapped + value[target.endIndex...]
    }

    /// A `Link` header: every `<URI>; params` entry whose URI stays inside the gateway, mapped; the others dropped.
    /// `nil` when nothing is left.
    public func rewriteLink(_ value: String) -> String? {
        var entries: [String] = []
        var rest = Substring(value)
        while let open = rest.firstIndex(of: "<") {
            guard let close = rest[open...].firstIndex(of: ">") else { break }
            let target = String(rest[rest.index(after: open)..<close])
            // Parameters run to the next comma outside quotes.
            var index = rest.index(after: close)
            var inQuotes = false
            while index < rest.endIndex, inQuotes || rest[index] != "," {
                if rest[index] == "\"" { inQuotes.toggle() }
                index = rest.index(after: index)
            }
            if let mapped = navigationTarget(target) { entries.append("<\(mapped)>" + rest[rest.index(after: close)..<index]) }
            rest = index < rest.endIndex ? rest[rest.index(after: index)...] : ""
        }
        return entries.isEmpty ? nil : entries.joined(separator: ", ")
    }
}
