import Foundation

/// Links out of the organization's apps. A link, form action, meta refresh or `Refresh` header of an app's page that
/// would take the browser to a host outside the allowlist is sent through the gateway's leaving page instead, which
/// names the destination and lets the member go on only where the configuration allows leaving at all.
///
/// The destination is read as a browser reads it (WHATWG URL, for `http` and `https`): tabs and newlines dropped,
/// spaces and control characters trimmed, `\` as `/`, any number of slashes after the scheme, user info before the
/// last `@` ignored, the port dropped, a trailing dot and letter case not making another host.
public struct Departures: Sendable, Equatable {
    public let allowlist: Allowlist
    /// The leaving page's URL: a path on the gateway's host, or the gateway's origin and path for pages on app hosts.
    public let page: String

    public init(allowlist: Allowlist, page: String) {
        self.allowlist = allowlist
        self.page = page
    }

    /// The leaving page for `value`, when it is a URL that leaves for a host outside the allowlist; `nil` for anything
    /// else (relative references, allowed hosts, other schemes, which the page's own policy governs).
    public func leavingPage(for value: String) -> String? {
        guard let destination = Self.destination(value), !allowlist.isAllowed(host: destination.host) else { return nil }
        return page + "?to=" + FormEncoding.escape(destination.url)
    }

    /// A URL a browser would follow to another host: its normalized text (`https://host[:port]/rest`, without user
    /// info, which only serves to dress one host up as another) and its host as the browser reaches it, or `nil` when
    /// `value` is not an absolute or scheme-relative `http(s)` URL.
    public static func destination(_ value: String) -> (url: String, host: String)? {
        var rest = Substring(URLRewriter.asBrowsersRead(value).replacingOccurrences(of: "\\", with: "/"))
        var scheme = "https"
        if let colon = rest.firstIndex(of: ":"), ["http", "https"].contains(rest[..<colon].lowercased()) {
            scheme = rest[..<colon].lowercased()
            rest = rest[rest.index(after: colon)...]
        } else if !rest.hasPrefix("//") {
            return nil
        }
        rest = rest.drop { $0 == "/" }
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        var authority = rest[..<authorityEnd]
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        var host = authority
        if host.hasPrefix("["), let close = host.firstIndex(of: "]") {
            host = host[...close]
        } else if let colon = host.lastIndex(of: ":") {
            host = host[..<colon]
        }
        guard !host.isEmpty else { return nil }
        let path = rest[authorityEnd...]
        return (scheme + "://" + authority + (path.isEmpty ? "/" : path), String(host))
    }

    /// The host as the leaving page shows it: lower case, and a name holding letters outside ASCII also in the form
    /// browsers send (`xn--…`, RFC 3492), since such names can imitate familiar ones.
    public static func shownHost(_ host: String) -> (host: String, ascii: String?) {
        let lower = host.lowercased()
        guard !lower.unicodeScalars.allSatisfy(\.isASCII) else { return (lower, nil) }
        let labels = lower.split(separator: ".", omittingEmptySubsequences: false).map { label in
            label.unicodeScalars.allSatisfy(\.isASCII) ? String(label) : "xn--" + Punycode.encode(String(label))
        }
        return (lower, labels.joined(separator: "."))
    }
}

/// RFC 3492 encoding of one label (its basic code points first, then the deltas of the others).
enum Punycode {
    static func encode(_ label: String) -> String {
        let (base, tMin, tMax, skew, damp, initialBias, initialN) = (36, 1, 26, 38, 700, 72, 128)
        let scalars = label.unicodeScalars.map { Int($0.value) }
        var output = scalars.filter { $0 < 0x80 }.map { Character(Unicode.Scalar(UInt8($0))) }
        let basicCount = output.count
        var handled = basicCount
        if basicCount > 0 { output.append("-") }
        func digit(_ value: Int) -> Character {
            Character(Unicode.Scalar(UInt8(value < 26 ? value + 97 : value + 22)))
        }
        func adapt(_ delta: Int, _ count: Int, _ first: Bool) -> Int {
            var delta = first ? delta / damp : delta / 2
            delta += delta / count
            var k = 0
            while delta > ((base - tMin) * tMax) / 2 {
                delta /= base - tMin
                k += base
            }
            return k + (base - tMin + 1) * delta / (delta + skew)
        }
        var (n, delta, bias) = (initialN, 0, initialBias)
        while handled < scalars.count {
            let next = scalars.filter { $0 >= n }.min()!
            delta += (next - n) * (handled + 1)
            n = next
            for scalar in scalars {
                if scalar < n { delta += 1 }
                if scalar == n {
                    var q = delta
                    var k = base
                    while true {
                        let t = k <= bias ? tMin : (k >= bias + tMax ? tMax : k - bias)
                        if q < t { break }
                        output.append(digit(t + (q - t) % (base - t)))
                        q = (q - t) / (base - t)
                        k += base
                    }
                    output.append(digit(q))
                    bias = adapt(delta, handled + 1, handled == basicCount)
                    delta = 0
                    handled += 1
                }
            }
            delta += 1
            n += 1
        }
        return String(output)
    }
}
