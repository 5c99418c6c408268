import Foundation
import GatehouseCore

/// The configured apps by slug, with what the proxy needs to map URLs between upstream and gateway.
public struct AppCatalog: Sendable {
    public let apps: [AppConfiguration]
    /// Where each app lives for a page of the gateway's own host (`/apps/<slug>` or an app host's origin).
    let mounts: [String: URLRewriter.Mount]
    /// The same, absolute, for pages on an app host (where `/apps/…` would resolve against the wrong host).
    let absoluteMounts: [String: URLRewriter.Mount]
    let appsDomain: AppsDomain?
    /// Each app's rewriter (`urlRewriter(for:)`), made once: every proxied page and redirect asks for one.
    private let rewriters: [String: URLRewriter]
    /// Links in chat messages (`messageLink`): every app's upstream to its place on the gateway, absolute.
    private let messageLinks: URLRewriter
    private let publicOrigin: String

    /// The console's apps an operator turned off, by slug, with their names.
    public let turnedOff: [String: String]
    /// The apps by slug (`app(_:)` is asked on every request).
    private let bySlug: [String: AppConfiguration]
    /// Each app's `upstreamBase`, by slug.
    private let upstreamBases: [String: String]

    /// With `allowlist`, links of apps' pages to hosts outside it go through the leaving page (`Departures`).
    public init(
        apps: [AppConfiguration], publicOrigin: String = "", appsDomain: AppsDomain? = nil, allowlist: Allowlist? = nil, turnedOff: [String: String] = [:]
    ) {
        self.apps = apps
        self.turnedOff = turnedOff
        bySlug = Dictionary(apps.map { ($0.slug, $0) }, uniquingKeysWith: { first, _ in first })
        upstreamBases = bySlug.mapValues { Self.upstreamBase($0.upstream) }
        self.appsDomain = appsDomain
        var mounts: [String: URLRewriter.Mount] = [:]
        var absoluteMounts: [String: URLRewriter.Mount] = [:]
        // An external app is reached at its own URL, which pages keep as they are: it has no mount of the gateway's.
        for app in apps where app.mount != .external {
            let prefix: String
            if app.mount == .host, let appsDomain {
                prefix = appsDomain.origin(of: app.slug)
                absoluteMounts[app.slug] = URLRewriter.Mount(prefix: prefix, upstream: app.upstream)
            } else {
                prefix = Paths.app(app.slug)
                absoluteMounts[app.slug] = URLRewriter.Mount(prefix: publicOrigin + prefix, upstream: app.upstream)
            }
            mounts[app.slug] = URLRewriter.Mount(prefix: prefix, upstream: app.upstream)
        }
        self.mounts = mounts
        self.absoluteMounts = absoluteMounts
        var rewriters: [String: URLRewriter] = [:]
        for app in apps {
            guard let mount = mounts[app.slug] else { continue }
            if app.mount == .host, appsDomain != nil {
                // On an app host the leaving page is the gateway's, by its origin.
                let current = URLRewriter.Mount(prefix: "", upstream: app.upstream)
                rewriters[app.slug] = URLRewriter(
                    current: current, all: [current] + apps.filter { $0.slug != app.slug }.compactMap { absoluteMounts[$0.slug] },
                    departures: allowlist.map { Departures(allowlist: $0, page: publicOrigin + Paths.leaving) })
            } else {
                rewriters[app.slug] = URLRewriter(
                    current: mount, all: apps.compactMap { mounts[$0.slug] },
                    departures: allowlist.map { Departures(allowlist: $0, page: Paths.leaving) })
            }
        }
        self.rewriters = rewriters
        self.publicOrigin = publicOrigin
        let gateway = URLRewriter.Mount(prefix: publicOrigin, upstream: URL(string: publicOrigin.isEmpty ? "https://gateway.invalid" : publicOrigin)!)
        messageLinks = URLRewriter(
            current: gateway, all: apps.compactMap { absoluteMounts[$0.slug] },
            departures: allowlist.map { Departures(allowlist: $0, page: publicOrigin + Paths.leaving) })
        externalApps = Dictionary(
            apps.filter { $0.mount == .external }.map { (Self.origin($0.upstream), $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// Where a link in a chat message takes the member (an `http`, `https` or `mailto` link the message's markup
    /// kept): an app's own address (its upstream, which members pasting from inside the network often have) through
    /// the gateway, as its pages link it; the gateway's own pages and app hosts as they are; any other address outside
    /// the allowlist through the leaving page, as an app's link there would.
    public func messageLink(_ href: String) -> String {
        guard let destination = Departures.destination(href) else { return href }
        if let mapped = messageLinks.rewriteAbsolute(destination.url) { return mapped }
        let isGateway = destination.url.lowercased().hasPrefix(publicOrigin.lowercased() + "/")
        if isGateway || appsDomain?.slug(inAuthority: destination.host) != nil { return href }
        return messageLinks.departures?.leavingPage(for: href) ?? href
    }

    /// The external apps by their public origin (`scheme://host[:port]`, lower case).
    private let externalApps: [String: AppConfiguration]

    /// The external app at `origin`, as forward-auth finds it from the ingress's original URL.
    public func externalApp(origin: String) -> AppConfiguration? {
        externalApps[origin.lowercased()]
    }

    /// The origins of the external apps: where a member may be sent back to after signing in.
    public var externalOrigins: [String] { Array(externalApps.keys) }

    /// `scheme://host[:port]` in lower case, the port only when the URL names a port other than the scheme's own.
    public static func origin(_ url: URL) -> String {
        let scheme = url.scheme?.lowercased() ?? "https"
        let port = url.port.flatMap { (scheme == "https" && $0 == 443) || (scheme == "http" && $0 == 80) ? nil : $0 }
        let host = url.host?.lowercased() ?? ""
        return scheme + "://" + (host.contains(":") ? "[\(host)]" : host) + (port.map { ":\($0)" } ?? "")
    }

    /// The apps the portal and the bar's switcher list for a member: those open at level `sso` (the chat features'
    /// apps have their own entries) that the member's roles and groups reach.
    public func listedApps(for identity: MemberIdentity, level: AuthLevel) -> [AppConfiguration] {
        AccessPolicy.visibleApps(apps.filter { $0.minimumLevel == .sso }, for: identity, level: level)
    }

    public func app(_ slug: String) -> AppConfiguration? {
        bySlug[slug]
    }

    /// The rewriter for pages and redirects of `slug`: its own URLs and every other mounted app's. A host-mounted
    /// app's own URLs become paths on its host; other apps' become absolute gateway URLs.
    public func urlRewriter(for slug: String) -> URLRewriter? {
        rewriters[slug]
    }

    /// The upstream URL for a gateway path of an app (`rest` starts with `/`, query included).
    public func upstreamURL(for app: AppConfiguration, rest: String) -> URL? {
        URL(string: (upstreamBases[app.slug] ?? Self.upstreamBase(app.upstream)) + rest)
    }

    /// An app's upstream URL as the start of its requests' URLs: without its trailing `/`.
    static func upstreamBase(_ upstream: URL) -> String {
        let text = upstream.absoluteString
        return text.hasSuffix("/") ? String(text.dropLast()) : text
    }

    /// Where the portal links to an app.
    public func entryURL(for app: AppConfiguration) -> String {
        if app.mount == .external { return app.upstream.absoluteString }
        if app.mount == .host, let appsDomain { return appsDomain.origin(of: app.slug) + "/" }
        return Paths.app(app.slug) + "/"
    }

    /// Whether `/apps/<slug>/…` proxies the app: path-mounted apps, and host-mounted ones while there is no apps
    /// domain; never an external app (its ingress asks `/auth/verify` instead).
    public func isProxiedOnPaths(_ app: AppConfiguration) -> Bool {
        app.mount == .path || (app.mount == .host && appsDomain == nil)
    }

    /// `/apps/<slug>/rest`: the app and the rest (from its `/`, query included); `/apps/<slug>` alone is nil (the
    /// application redirects it).
    public func appPath(_ uri: String) -> (AppConfiguration, String)? {
        let prefix = Paths.appsPrefix + "/"
        guard uri.hasPrefix(prefix) else { return nil }
        let afterPrefix = uri.dropFirst(prefix.count)
        guard let slash = afterPrefix.firstIndex(of: "/"), let app = app(String(afterPrefix[..<slash])) else { return nil }
        return (app, String(afterPrefix[slash...]))
    }

    /// The host-mounted app a request's `Host` names, if any.
    public func hostMountedApp(authority: String?) -> AppConfiguration? {
        guard let appsDomain, let authority, let slug = appsDomain.slug(inAuthority: authority), let app = app(slug), app.mount == .host else {
            return nil
        }
        return app
    }
}

/// `<slug>.<apps domain>`: where host-mounted apps live, on the gateway's own listener, scheme and port.
public struct AppsDomain: Sendable, Equatable {
    public let domain: String
    let scheme: String
    let port: Int?

    public init(domain: String, publicURL: URL) {
        self.domain = domain.lowercased()
        self.scheme = publicURL.scheme?.lowercased() ?? "https"
        self.port = publicURL.port
    }

    public func origin(of slug: String) -> String {
        "\(scheme)://\(slug).\(domain)" + (port.map { ":\($0)" } ?? "")
    }

    /// The slug of `visits.apps.example.org[:port]`, or nil for any other host (and for deeper subdomains).
    public func slug(inAuthority authority: String) -> String? {
        var host = authority.lowercased()
        if let colon = host.lastIndex(of: ":"), !host.hasSuffix("]") { host = String(host[..<colon]) }
        if host.hasSuffix(".") { host.removeLast() }
        guard host.hasSuffix("." + domain) else { return nil }
        let slug = String(host.dropLast(domain.count + 1))
        return slug.isEmpty || slug.contains(".") ? nil : slug
    }
}
