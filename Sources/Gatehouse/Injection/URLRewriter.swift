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

    /// `Refresh: 5; url=/next`: rewrites the URL part.
    public func rewriteRefresh(_ value: String) -> String {
        guard let range = value.range(of: "url=", options: .caseInsensitive) else { return value }
        var target = String(value[range.upperBound...]).trimmingCharacters(in: .whitespaces)
        var quote = ""
        if let first = target.first, first == "'" || first == "\"" {
            quote = String(first)
            target = String(target.dropFirst())
            if target.hasSuffix(quote) { target.removeLast() }
        }
        return value[..<range.upperBound] + quote + (rewrite(target) ?? target) + quote
    }
}
