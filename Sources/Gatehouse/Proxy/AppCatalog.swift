import Foundation

/// The configured apps by slug, with what the proxy needs to map URLs between upstream and gateway.
public struct AppCatalog: Sendable {
    public let apps: [AppConfiguration]
    let mounts: [String: URLRewriter.Mount]

    public init(apps: [AppConfiguration]) {
        self.apps = apps
        var mounts: [String: URLRewriter.Mount] = [:]
        for app in apps { mounts[app.slug] = URLRewriter.Mount(prefix: Paths.app(app.slug), upstream: app.upstream) }
        self.mounts = mounts
    }

    public func app(_ slug: String) -> AppConfiguration? {
        apps.first { $0.slug == slug }
    }

    /// The rewriter for pages and redirects of `slug`: its own URLs and every other mounted app's.
    public func urlRewriter(for slug: String) -> URLRewriter? {
        guard let current = mounts[slug] else { return nil }
        return URLRewriter(current: current, all: apps.compactMap { mounts[$0.slug] })
    }

    /// The upstream URL for a gateway path below `/apps/<slug>` (`rest` starts with `/`, query included).
    public func upstreamURL(for app: AppConfiguration, rest: String) -> URL? {
        let base = app.upstream.absoluteString.hasSuffix("/") ? String(app.upstream.absoluteString.dropLast()) : app.upstream.absoluteString
        return URL(string: base + rest)
    }
}
