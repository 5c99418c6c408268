import Foundation
import GatehouseCore

/// The browser's `Origin` and `Referer` as an app expects them. The browser names the gateway's URLs (`/apps/<slug>/…`
/// on the gateway's origin, or an app host); an app that checks where a form came from (Django, Rails, Laravel,
/// Spring, Go's `CrossOriginProtection`, Jupyter) compares them with its own `Host`, which is its upstream's. So a
/// page of a mounted app becomes that app's upstream URL (for a path mount: the path without the mount's prefix,
/// unless the app was told it), and the gateway's own origins the origin of the app whose page it was.
///
/// The gateway's own check comes first (`refusal`): a request that changes something must come from one of the
/// gateway's origins, since the app can no longer tell.
final class OriginMapping: Sendable {
    /// Where each mounted app's pages are and what they are upstream.
    struct Place: Sendable {
        /// `https://gate.example.org/apps/wiki` or `https://wiki.apps.example.org`: where the app's pages are.
        let pagePrefix: String
        /// The origin those pages have in the browser.
        let pageOrigin: String
        /// Its host and port (when not the scheme's), as `Host` and `X-Forwarded-Host` name it.
        var pageAuthority: String { pageOrigin.components(separatedBy: "://").last ?? pageOrigin }
        let upstreamOrigin: String
        /// The upstream's origin and base path, ending with `/`.
        let upstreamBase: String
    }

    let places: [Place]
    let bySlug: [String: Place]
    /// The gateway's origin and every app host's.
    let gatewayOrigins: Set<String>

    init(catalog: AppCatalog, publicOrigin: String) {
        var places: [Place] = []
        var bySlug: [String: Place] = [:]
        for app in catalog.apps {
            guard let mount = catalog.absoluteMounts[app.slug] else { continue }
            let pageOrigin = URL(string: mount.prefix).map(AppCatalog.origin) ?? publicOrigin
            let place = Place(
                pagePrefix: mount.prefix, pageOrigin: pageOrigin, upstreamOrigin: mount.origin, upstreamBase: mount.origin + mount.basePath)
            places.append(place)
            bySlug[app.slug] = place
        }
        // The longest prefixes first: `/apps/wiki-admin` before `/apps/wiki`.
        self.places = places.sorted { $0.pagePrefix.count > $1.pagePrefix.count }
        self.bySlug = bySlug
        gatewayOrigins = Set([publicOrigin] + places.map(\.pageOrigin))
    }

    /// The app's place a page URL is in, and that page's upstream URL.
    func upstream(ofPage url: String) -> (place: Place, url: String)? {
        for place in places where url.hasPrefix(place.pagePrefix) {
            let rest = url.utf8.dropFirst(place.pagePrefix.utf8.count)
            if rest.isEmpty { return (place, place.upstreamBase) }
            guard rest.first == UInt8(ascii: "/") else { continue }
            return (place, place.upstreamBase + Substring(rest.dropFirst()))
        }
        return nil
    }

    /// Why the gateway refuses a request that changes something (`unsafe`) to an app, or `nil`: its `Origin` is not
    /// one of the gateway's (a page of another site, or `null`), or, from a browser that sends no `Origin`, Fetch
    /// Metadata says it is cross-site.
    func refusal(origin: String?, fetchSite: String?) -> String? {
        if let origin {
            return gatewayOrigins.contains(origin) ? nil : "a request from another origin (\(origin.prefix(100)))"
        }
        return fetchSite == "cross-site" ? "a cross-site request" : nil
    }

    /// The `Origin` and `Referer` the app `slug` gets for the browser's: a page of a mounted app as its upstream URL,
    /// the gateway's own pages' `Referer` dropped, anything else (another site) as it came.
    func map(origin: String?, referer: String?, to slug: String) -> (origin: String?, referer: String?) {
        var mappedReferer = referer
        var refererPlace: Place?
        if let referer {
            if let (place, url) = upstream(ofPage: referer) {
                mappedReferer = url
                refererPlace = place
            } else if gatewayOrigins.contains(where: { referer.hasPrefix($0 + "/") || referer == $0 }) {
                mappedReferer = nil  // a page of the gateway's own (Web Apps, a loading page): none of the app's business
            }
        }
        guard let origin, gatewayOrigins.contains(origin) else { return (origin, mappedReferer) }
        if let place = bySlug[slug], place.pageOrigin == origin, refererPlace == nil || refererPlace?.pageOrigin != origin {
            return (place.upstreamOrigin, mappedReferer)
        }
        if let refererPlace, refererPlace.pageOrigin == origin { return (refererPlace.upstreamOrigin, mappedReferer) }
        // An app host's page (each app host is its own origin).
        if let place = places.first(where: { $0.pageOrigin == origin && $0.pagePrefix == origin }) { return (place.upstreamOrigin, mappedReferer) }
        return (origin, mappedReferer)
    }
}
