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
            // Compared as bytes (a page has many links): the base path is ASCII, percent-encoded.
            let bytes = path.utf8
            let base = basePath.utf8
            if bytes.starts(with: base) { return prefix + "/" + Substring(bytes.dropFirst(base.count)) }
            let bare = base.dropLast()
            guard bytes.starts(with: bare) else { return nil }
            let rest = bytes.dropFirst(bare.count)
            if rest.isEmpty || rest.first == UInt8(ascii: "?") || rest.first == UInt8(ascii: "#") { return prefix + "/" + Substring(rest) }
            return nil
        }
    }

    public let current: Mount
    public let all: [Mount]
    /// Links to hosts outside the allowlist go through the leaving page; `nil` leaves them as written.
    public let departures: Departures?

    public init(current: Mount, all: [Mount], departures: Departures? = nil) {
        self.current = current
        self.all = all
        self.departures = departures
    }

    /// Where a navigation (`href`, `action`, `formaction`, with character references already decoded) takes the
    /// browser through the gateway: a mounted app's URL mapped, a departure for a host outside the allowlist to the
    /// leaving page; `nil` to keep the value as written.
    public func rewriteNavigation(_ value: String) -> String? {
        rewrite(value) ?? departures?.leavingPage(for: value)
    }

    static func origin(of url: URL) -> String? {
        guard let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased() else { return nil }
        let defaultPort = scheme == "https" ? 443 : 80
        return "\(scheme)://\(host)" + (url.port.map { $0 == defaultPort ? "" : ":\($0)" } ?? "")
    }

    /// The gateway URL for `value`, or `nil` when it is not a URL of a mounted app.
    public func rewrite(_ value: String) -> String? {
        let utf8 = value.utf8[...]
        if Self.hasPrefix(utf8, "//") {
            let scheme = current.origin.hasPrefix("https") ? "https:" : "http:"
            return rewriteAbsolute(scheme + value)
        }
        if Self.hasPrefix(utf8, "/") {
            // A path on the current app's host: most links of a page, mapped without building a URL at all.
            if Self.isPlainURLRest(utf8) { return mapped(origin: current.origin, path: value) }
            return rewriteAbsolute(current.origin + value)
        }
        if Self.hasPrefix(utf8, "http://") || Self.hasPrefix(utf8, "https://") { return rewriteAbsolute(value) }
        return nil
    }

    /// An absolute URL of any mounted app.
    public func rewriteAbsolute(_ value: String) -> String? {
        guard let (origin, path) = Self.plainOriginAndPath(value) ?? Self.parsedOriginAndPath(value) else { return nil }
        return mapped(origin: origin, path: path)
    }

    /// The gateway path for a path (with query and fragment) on an upstream origin, by the first mount that has it.
    func mapped(origin: String, path: String) -> String? {
        if current.origin == origin, let mapped = current.gatewayPath(forUpstreamPath: path) { return mapped }
        for mount in all where mount.origin == origin {
            if let mapped = mount.gatewayPath(forUpstreamPath: path) { return mapped }
        }
        return nil
    }

    /// The origin and the path (with query and fragment) of an absolute URL, as Foundation reads them.
    static func parsedOriginAndPath(_ value: String) -> (origin: String, path: String)? {
        guard let url = URL(string: value), let origin = Self.origin(of: url) else { return nil }
        var path = url.path(percentEncoded: true)
        if path.isEmpty { path = "/" }
        if let query = url.query(percentEncoded: true) { path += "?" + query }
        if let fragment = url.fragment(percentEncoded: true) { path += "#" + fragment }
        return (origin, path)
    }

    /// The same as `parsedOriginAndPath` without Foundation, for the common case of a page's links: `http(s)://`,
    /// a host of letters, digits, dots and dashes, an optional port, then only characters a URL may hold as they
    /// are. Anything else (user info, IPv6, percent-encoded hosts, spaces, backslashes) is left to Foundation (`nil`).
    static func plainOriginAndPath(_ value: String) -> (origin: String, path: String)? {
        var utf8 = value.utf8[...]
        let scheme: String
        if Self.hasPrefix(utf8, "https://") {
            scheme = "https"
            utf8 = utf8.dropFirst(8)
        } else if Self.hasPrefix(utf8, "http://") {
            scheme = "http"
            utf8 = utf8.dropFirst(7)
        } else {
            return nil
        }
        let authorityEnd = utf8.firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? utf8.endIndex
        let authority = utf8[..<authorityEnd]
        let colon = authority.firstIndex(of: UInt8(ascii: ":"))
        let host = authority[..<(colon ?? authority.endIndex)]
        guard !host.isEmpty, host.allSatisfy(Self.isHostByte) else { return nil }
        var origin = scheme + "://" + String(decoding: host, as: UTF8.self).lowercased()
        if let colon {
            let digits = authority[authority.index(after: colon)...]
            guard !digits.isEmpty, digits.count <= 5, digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
                let port = Int(String(decoding: digits, as: UTF8.self)), port <= 65535
            else { return nil }
            if port != (scheme == "https" ? 443 : 80) { origin += ":\(port)" }
        }
        let rest = utf8[authorityEnd...]
        guard Self.isPlainURLRest(rest) else { return nil }
        let path = String(decoding: rest, as: UTF8.self)
        return (origin, path.hasPrefix("/") ? path : "/" + path)
    }

    static func hasPrefix(_ utf8: Substring.UTF8View, _ prefix: StaticString) -> Bool {
        guard utf8.count >= prefix.utf8CodeUnitCount else { return false }
        return zip(utf8, UnsafeBufferPointer(start: prefix.utf8Start, count: prefix.utf8CodeUnitCount)).allSatisfy { $0.asciiLowercased == $1 }
    }

    static func isHostByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "."), UInt8(ascii: "-"):
            true
        default: false
        }
    }

    /// Whether Foundation would keep `rest` (path, query, fragment) exactly as it is: printable ASCII a URL carries
    /// unescaped (no space, quotes, `<>`, `[\\]`, `^`, backquote, `{|}`), `%` only before two hex digits, one `#` at most.
    static func isPlainURLRest(_ rest: Substring.UTF8View.SubSequence) -> Bool {
        var sawFragment = false
        var index = rest.startIndex
        while index != rest.endIndex {
            let byte = rest[index]
            switch byte {
            case 0x21, 0x24, 0x26...0x3B, 0x3D, 0x3F...0x5A, 0x5F, 0x61...0x7A, 0x7E:
                break
            case UInt8(ascii: "#") where !sawFragment:
                sawFragment = true
            case UInt8(ascii: "%"):
                let digits = rest[rest.index(after: index)...].prefix(2)
                guard digits.count == 2, digits.allSatisfy(\.isHexDigit) else { return false }
            default:
                return false
            }
            index = rest.index(after: index)
        }
        return true
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
        let cleaned = Self.asBrowsersRead(value)
        if let mapped = rewrite(cleaned) { return mapped }
        if cleaned.hasPrefix("/") || cleaned.hasPrefix("\\") || Self.hasScheme(cleaned) { return nil }
        return cleaned
    }

    /// A URL as browsers take it in: tabs and newlines dropped anywhere, spaces and control characters around it.
    static func asBrowsersRead(_ value: String) -> String {
        // Most URLs of a page begin and end with a visible ASCII character and hold no tab or line break: those are
        // read as they are, without building Foundation's character sets for each.
        let bytes = value.utf8
        let isVisible = { (byte: UInt8) in (0x21...0x7E).contains(byte) }
        if let first = bytes.first, let last = bytes.last, isVisible(first), isVisible(last),
            !bytes.contains(where: { $0 == UInt8(ascii: "\t") || $0 == UInt8(ascii: "\n") || $0 == UInt8(ascii: "\r") })
        {
            return value
        }
        return String(value.unicodeScalars.filter { $0 != "\t" && $0 != "\n" && $0 != "\r" })
            .trimmingCharacters(in: CharacterSet.whitespaces.union(.controlCharacters))
    }

    /// `scheme:` at the start (RFC 3986 §3.1), as a browser would read it.
    static func hasScheme(_ value: String) -> Bool {
        guard let colon = value.firstIndex(of: ":") else { return false }
        let scheme = value[..<colon]
        guard let first = scheme.first, first.isASCII, first.isLetter else { return false }
        return scheme.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "+" || $0 == "-" || $0 == ".") }
    }

    /// `Refresh: 5; url=/next` (header or meta refresh) with its URL mapped (a departure to the leaving page), or `nil`
    /// when the URL would leave the gateway otherwise. A plain reload (`Refresh: 5`) stays as it is.
    public func rewriteRefresh(_ value: String) -> String? {
        guard let separator = value.firstIndex(where: { $0 == ";" || $0 == "," }) else {
            // No URL part; anything but a number would be a URL without `url=`, which browsers accept too.
            return value.trimmingOptionalWhitespace.allSatisfy { $0.isNumber || $0 == "." } ? value : nil
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
        guard let mapped = navigationTarget(String(target)) ?? departures?.leavingPage(for: String(target)) else { return nil }
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
