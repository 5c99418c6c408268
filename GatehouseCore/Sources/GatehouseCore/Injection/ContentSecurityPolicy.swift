/// One Content-Security-Policy: ordered directives with their source lists.
public struct ContentSecurityPolicy: Sendable, Equatable, CustomStringConvertible {
    public struct Directive: Sendable, Equatable {
        public var name: String
        public var sources: [String]
    }

    public private(set) var directives: [Directive]

    public init(_ directives: [Directive]) {
        self.directives = directives
    }

    /// Parses one serialized policy; a repeated directive is ignored, as browsers do.
    public init(parsing text: String) {
        var directives: [Directive] = []
        for part in text.split(separator: ";") {
            let tokens = part.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
            guard let name = tokens.first?.lowercased(), !directives.contains(where: { $0.name == name }) else { continue }
            directives.append(Directive(name: name, sources: Array(tokens.dropFirst())))
        }
        self.directives = directives
    }

    /// Every policy in a header value: policies are separated by commas (CSP3 §2.2.1).
    public static func parseAll(_ headerValues: [String]) -> [ContentSecurityPolicy] {
        headerValues.flatMap { $0.split(separator: ",") }.map { ContentSecurityPolicy(parsing: String($0)) }.filter { !$0.directives.isEmpty }
    }

    public var description: String {
        directives.map { ([$0.name] + $0.sources).joined(separator: " ") }.joined(separator: "; ")
    }

    public func sources(_ name: String) -> [String]? {
        directives.first { $0.name == name }?.sources
    }

    /// The gateway's policy for proxied pages: what it adds whatever the app does. Resources and connections only
    /// from the page's own origin and allowlisted ones (`data:` and `blob:` URLs are the page's own), no plugins, no
    /// framing by others, forms only to the gateway and allowlisted origins, `<base>` only from the gateway. Inline
    /// scripts and styles and `eval` stay as the app has them: an app that sends no policy relies on them (its page
    /// configuration, its bootstrap), and a policy of its own, where it has one, is enforced beside this one.
    public static func gatewayDefault(allowlistedSources: [String], formActionSources: [String]) -> ContentSecurityPolicy {
        ContentSecurityPolicy([
            Directive(name: "default-src", sources: ["'self'"] + allowlistedSources + ["data:", "blob:", "'unsafe-inline'", "'unsafe-eval'"]),
            Directive(name: "object-src", sources: ["'none'"]),
            Directive(name: "base-uri", sources: ["'self'"]),
            Directive(name: "frame-ancestors", sources: ["'self'"]),
            Directive(name: "form-action", sources: ["'self'"] + formActionSources),
        ])
    }

    /// This policy with the gateway bar allowed: the response's nonce on `script-src` and `style-src` (created from
    /// `default-src` where missing). Where a directive relies on `'unsafe-inline'`, a nonce would switch that off
    /// and break the page, so the bar's exact file URLs are added instead. The bar's images (the organization's
    /// logo) are allowed by their exact URLs on `img-src`, which takes no nonce.
    public func allowingBar(nonce: String, scriptURLs: [String], styleURLs: [String], imageURLs: [String] = []) -> ContentSecurityPolicy {
        var result = self
        for (name, urls) in [("script-src", scriptURLs), ("style-src", styleURLs), ("img-src", imageURLs)] where !urls.isEmpty {
            let base = sources(name) ?? sources("default-src")
            guard var list = base else { continue }  // nothing restricts this kind: nothing to add
            if list == ["'none'"] { list = [] }
            let relaxesInline = list.contains("'unsafe-inline'") && !list.contains { $0.hasPrefix("'nonce-") || $0.hasPrefix("'sha") }
            list += relaxesInline || name == "img-src" ? urls : ["'nonce-\(nonce)'"]
            if let index = result.directives.firstIndex(where: { $0.name == name }) {
                result.directives[index].sources = list
            } else {
                result.directives.append(Directive(name: name, sources: list))
            }
        }
        return result
    }

    /// One header value enforcing the gateway's policy (`nil`: none, for an app whose own policy is left alone) and
    /// every upstream policy at once (the browser applies each policy of a comma-separated list), so the result is
    /// never looser than any of them; only the bar is allowed in each. Empty when there is no policy at all.
    public static func combined(
        gateway: ContentSecurityPolicy?, upstream: [String], nonce: String?, scriptURLs: [String], styleURLs: [String], imageURLs: [String] = []
    ) -> String {
        let policies = (gateway.map { [$0] } ?? []) + parseAll(upstream)
        return policies.map { policy in
            nonce.map { policy.allowingBar(nonce: $0, scriptURLs: scriptURLs, styleURLs: styleURLs, imageURLs: imageURLs) } ?? policy
        }.map(\.description).joined(separator: ", ")
    }
}
