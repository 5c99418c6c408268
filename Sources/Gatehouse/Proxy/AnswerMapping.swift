import Foundation
import GatehouseCore
import HTTPTypes
import Logging
import NIOCore

/// How an app's answer head becomes the member's, whichever path serves the request (the application's or the data
/// plane's): hop-by-hop and handled fields out, `Location`, `Content-Location`, `Refresh` and `Link` mapped to the
/// gateway's URLs (a redirect outside the allowlist refused, the others dropped), the gateway's CSP merged with the
/// app's, and whether the body is rewritten and gets the bar. Cookies are the caller's business (the jar).
struct AnswerMapping: Sendable {
    let gatewayPolicy: GatehouseCore.ContentSecurityPolicy
    /// The bar's files (and the URL shim's) by their exact URLs, for policies that rely on `'unsafe-inline'`.
    let barScriptURLs: [String]
    let barStyleURLs: [String]
    /// The organization's logo in the bar (`brand.logo`).
    let barImageURLs: [String]
    let inflationLimits: HTMLResponseTransform.InflationLimits
    /// For the page that stands in for an app's empty error.
    let renderer: PageRenderer
    /// Rewritten pages go gzipped to browsers that take it (`proxy.compress_pages`).
    let compressesPages: Bool
    /// Each app's policy plan (`apps[].content_security_policy`), by slug.
    private let plans: [String: PolicyPlan]
    private let defaultPlan: PolicyPlan

    /// The gateway's part of an app's policy, and the header for an app that sends no policy of its own (most do not)
    /// without a nonce and, with one, cut where the nonce goes: rendered once.
    struct PolicyPlan: Sendable {
        let gateway: GatehouseCore.ContentSecurityPolicy?
        let alone: String
        let aloneAroundNonce: [String]
    }

    init(configuration: GatehouseConfiguration, renderer: PageRenderer) {
        self.renderer = renderer
        compressesPages = configuration.proxy.compressPages
        inflationLimits = .init(maximumBytes: configuration.proxy.maximumInflatedBytes, maximumRatio: configuration.proxy.maximumInflationRatio)
        let scriptURLs = [Paths.urlShimScript, Paths.barKeeperScript, Paths.toastsScript, Paths.sessionScript, Paths.barScript, Paths.liveScript].map {
            configuration.publicOrigin + renderer.assets.url(for: $0)
        }
        let styleURLs = ([Paths.barStyle] + [renderer.brand.style].compactMap { $0 }).map { configuration.publicOrigin + renderer.assets.url(for: $0) }
        let imageURLs = [renderer.brand.logo].compactMap { $0 }.map { configuration.publicOrigin + renderer.assets.url(for: $0) }
        barScriptURLs = scriptURLs
        barStyleURLs = styleURLs
        barImageURLs = imageURLs
        let allowlisted = configuration.allowlist.map { entry in "https://\(entry)" }
        let gatewayPolicy =
            configuration.proxy.contentSecurityPolicy.map(GatehouseCore.ContentSecurityPolicy.init(parsing:))
            ?? .gatewayDefault(allowlistedSources: allowlisted, formActionSources: allowlisted)
        self.gatewayPolicy = gatewayPolicy
        func plan(_ gateway: GatehouseCore.ContentSecurityPolicy?) -> PolicyPlan {
            PolicyPlan(
                gateway: gateway,
                alone: GatehouseCore.ContentSecurityPolicy.combined(
                    gateway: gateway, upstream: [], nonce: nil, scriptURLs: scriptURLs, styleURLs: styleURLs, imageURLs: imageURLs),
                aloneAroundNonce: GatehouseCore.ContentSecurityPolicy.combined(
                    gateway: gateway, upstream: [], nonce: Self.noncePlaceholder, scriptURLs: scriptURLs, styleURLs: styleURLs, imageURLs: imageURLs
                ).components(separatedBy: Self.noncePlaceholder))
        }
        defaultPlan = plan(gatewayPolicy)
        var plans: [String: PolicyPlan] = [:]
        for app in configuration.apps {
            switch app.contentSecurityPolicy {
            case .merge: continue
            case .app: plans[app.slug] = plan(nil)
            case .custom(let text): plans[app.slug] = plan(GatehouseCore.ContentSecurityPolicy(parsing: text))
            }
        }
        self.plans = plans
        let shimURL = renderer.assets.url(for: Paths.urlShimScript)
        var allowed = [configuration.publicURL.host ?? ""]
        for entry in configuration.allowlist where !allowed.contains(entry) { allowed.append(entry) }
        mountedUntold = Set(configuration.apps.filter(\.isRewrittenToItsMount).map(\.slug))
        var shimTags: [String: (before: [UInt8], after: [UInt8])] = [:]
        for app in configuration.apps where app.rewrite == .full && mountedUntold.contains(app.slug) {
            let mount = URLRewriter.Mount(prefix: Paths.app(app.slug), upstream: app.upstream)
            let attributes = [
                ("data-prefix", mount.prefix), ("data-upstream", mount.origin + mount.basePath), ("data-leaving", Paths.leaving),
                ("data-allow", allowed.joined(separator: " ")),
            ].map { name, value in " \(name)=\"\(HTMLStreamRewriter.escapeAttribute(value))\"" }.joined()
            shimTags[app.slug] = (Array("<script src=\"\(shimURL)\" nonce=\"".utf8), Array("\"\(attributes)></script>".utf8))
        }
        self.shimTags = shimTags
        permissions = Dictionary(
            configuration.apps.map { app in
                (app.slug, HTTPField(name: SecurityHeaders.permissionsPolicy, value: PermissionsPolicy.header(allowing: app.permissions)))
            }, uniquingKeysWith: { first, _ in first })
    }

    /// Each app's `Permissions-Policy` (`PermissionsPolicy`), by slug, made once: a field checked once, not per answer.
    private let permissions: [String: HTTPField]
    private static let noPermissions = HTTPField(name: SecurityHeaders.permissionsPolicy, value: PermissionsPolicy.header(allowing: []))

    /// The path-mounted apps not told their mount whose pages and style sheets are rewritten (worked out once).
    private let mountedUntold: Set<String>
    /// The URL shim's tag for each app that gets it, cut where the response's nonce goes.
    private let shimTags: [String: (before: [UInt8], after: [UInt8])]

    static let noncePlaceholder = "GATEHOUSEnoncePLACEHOLDER"

    /// The gateway's policy for `app` combined with the app's (each enforced: the browser applies every policy in the
    /// header).
    func policy(app: String, upstream: [String], nonce: String?) -> String {
        let plan = plans[app] ?? defaultPlan
        guard upstream.isEmpty else {
            return GatehouseCore.ContentSecurityPolicy.combined(
                gateway: plan.gateway, upstream: upstream, nonce: nonce, scriptURLs: barScriptURLs, styleURLs: barStyleURLs, imageURLs: barImageURLs)
        }
        let value = nonce.map { plan.aloneAroundNonce.joined(separator: $0) } ?? plan.alone
        // An app whose own policy is left alone and that sends none: only what every answer of the gateway has
        // (no framing by others), instead of the gateway's strict policy for its own pages (`SecurityHeaders`).
        return value.isEmpty ? Self.framingOnly : value
    }

    static let framingOnly = "frame-ancestors 'self'"

    /// An app page's `Cross-Origin-Opener-Policy`: the app's own, but never `same-origin`, the value of the gateway's
    /// pages. A path-mounted app shares the gateway's origin, and a window it opens on a gateway page would otherwise
    /// join its browsing context group and be readable by its scripts; `same-origin-allow-popups` keeps what the app
    /// asked for towards other origins. Set on every answer, so that the gateway's own value is never added.
    static func openerPolicy(_ upstream: String?) -> String {
        guard let upstream, !upstream.isEmpty else { return "unsafe-none" }
        let value = upstream.split(separator: ";", maxSplits: 1)[0].trimmingOptionalWhitespace.lowercased()
        return value == "same-origin" ? "same-origin-allow-popups" : upstream
    }

    /// The member's head, before the body is known.
    struct Head {
        var headers: HTTPFields
        /// Set when the body goes through the HTML transform: the coding to decode it from.
        var encoding: HTMLResponseTransform.Encoding?
        /// The body is a style sheet (its URLs rewritten), not a page.
        var isStyleSheet = false
        /// Set when the bar goes in: the nonce its script and style carry.
        var nonce: String?
        /// The app's `Content-Length`, for a body that goes out as it came.
        var contentLength: String?
        /// Set for an app's error to a page the member opened: if its body is empty, the transform answers with a
        /// page of the gateway's that says what happened.
        var emptyError: HTTPResponse.Status? = nil
        /// Set when the transformed body goes gzipped (the browser takes it).
        var compresses = false
        /// Whether the gateway compresses pages at all: then the answer varies with `Accept-Encoding`.
        var mayCompress = false

        /// The head of a body that goes out as the app sent it: with the app's length.
        var untransformedHeaders: HTTPFields {
            var fields = headers
            if let contentLength { fields[.contentLength] = contentLength }
            return fields
        }

        /// What goes out once the first bytes of a body to be transformed are known (`nil`: the body is empty), the
        /// same on both paths: a UTF-16 document (by its byte-order mark) passes through untouched (`transform`
        /// becomes `nil`); anything else goes through `transform`, so that a body that fails at once (a bomb) still
        /// gets a page of the gateway's. The member's head, and the first bytes as they go out.
        func start(_ chunk: ByteBuffer?, transform: inout HTMLResponseTransform?) throws -> (headers: HTTPFields, first: ByteBuffer?) {
            if let chunk, encoding == .identity, AnswerMapping.startsWithUTF16ByteOrderMark(chunk.readableBytesView) {
                transform = nil
                return (untransformedHeaders, chunk)
            }
            let first = try chunk.map { try transform?.process($0) ?? $0 }
            return (transformedHeaders, first)
        }

        /// The head of a body that went through the transform: the app's coding gone (the body was inflated), gzip
        /// in its place when the gateway compresses it, and caches told that the coding depends on the browser.
        var transformedHeaders: HTTPFields {
            var fields = headers
            fields[.contentEncoding] = compresses ? "gzip" : nil
            if mayCompress, !fields[values: .vary].contains(where: { $0.lowercased().containsBytes(of: "accept-encoding") || $0 == "*" }) {
                fields.append(HTTPField(name: .vary, value: "Accept-Encoding"))
            }
            return fields
        }
    }

    func map(
        app: AppConfiguration, status: HTTPResponse.Status, upstream: HTTPFields, isHEAD: Bool, isNavigation: Bool, acceptsGzip: Bool, url: URL,
        urls: URLRewriter,
        logger: @autoclosure () -> Logger
    ) throws(ProxyError) -> Head {
        var headers = HeaderHygiene.responseHeaders(from: upstream)
        let upstream = Fields(upstream)
        if (300...399).contains(status.code), let location = upstream.location {
            guard let target = URL(string: location, relativeTo: url)?.absoluteURL, let mapped = urls.rewriteAbsolute(target.absoluteString) else {
                // Logged and reported without its query and fragment: they may carry the member's codes or tokens.
                let shown = Self.withoutQuery(location)
                logger().notice("redirect outside the allowlist refused", metadata: ["location": .string(shown)])
                throw .redirectOutsideAllowlist(shown)
            }
            headers[.location] = mapped
        }
        if let contentLocation = upstream.contentLocation {
            headers[.contentLocation] = urls.rewrite(contentLocation) ?? contentLocation
        }
        // `Refresh` and `Link` navigate and fetch like `Location` does: mapped, or dropped when they lead outside.
        for refresh in upstream.refresh {
            if let mapped = urls.rewriteRefresh(refresh) {
                headers.append(HTTPField(name: Self.refresh, value: mapped))
            } else {
                logger().notice("refresh outside the allowlist dropped", metadata: ["refresh": .string(Self.withoutQuery(refresh))])
            }
        }
        for link in upstream.link {
            if let mapped = urls.rewriteLink(link) { headers.append(HTTPField(name: Self.link, value: mapped)) }
        }

        let hasBody = !isHEAD && status != .noContent && status != .notModified
        // An app's error to a page the member opened, with nothing to show (an empty body, or an HTML one that turns
        // out empty): the member gets a page that says so, with the bar, instead of the browser's own dead end.
        let isEmpty = upstream.contentLength.map { $0.trimmingOptionalWhitespace == "0" } ?? false
        let fillsEmptyError = isNavigation && hasBody && status.code >= 400
        if fillsEmptyError && isEmpty { headers[.contentType] = "text/html; charset=utf-8" }
        let isHTML = (fillsEmptyError && isEmpty) || Self.isDocument(contentType: upstream.contentType)
        // Style sheets of an app on a path mount it was not told: their `url(/…)` would miss the mount.
        let isStyleSheet =
            !isHTML && upstream.contentType.map { Self.starts($0, with: "text/css") } == true && mountedUntold.contains(app.slug)
        // A partial body cannot be rewritten without breaking its ranges, nor a document whose charset does not
        // spell `<` as ASCII does (UTF-16, UTF-32): both pass through untouched.
        let isRewritable =
            (isHTML || isStyleSheet) && hasBody && status != .partialContent && Self.isASCIICompatible(contentType: upstream.contentType)
        let encoding = isRewritable ? HTMLResponseTransform.encoding(of: upstream.contentEncoding) : nil
        // Every page the member reads gets the bar (an app's own error pages too), not redirects or downloads.
        let injectBar =
            encoding != nil && isHTML && isNavigation && !(300...399).contains(status.code)
            && !(upstream.contentDisposition?.lowercased().hasPrefix("attachment") ?? false)
        let nonce = injectBar ? RandomToken.make(bytes: 18) : nil
        headers[.contentSecurityPolicy] = policy(app: app.slug, upstream: upstream.contentSecurityPolicy, nonce: nonce)
        headers[SecurityHeaders.openerPolicy] = Self.openerPolicy(upstream.openerPolicy)
        // After the app's own: for the features the gateway names, its value is the one that counts.
        headers.append(permissions[app.slug] ?? Self.noPermissions)
        return Head(
            headers: headers, encoding: encoding, isStyleSheet: isStyleSheet, nonce: nonce, contentLength: upstream.contentLength,
            emptyError: fillsEmptyError && nonce != nil ? status : nil, compresses: encoding != nil && compressesPages && acceptsGzip,
            mayCompress: encoding != nil && compressesPages)
    }

    /// The fields of the app's head the mapping reads, found in one pass (as `HTTPFields`' subscripts give them:
    /// repeated fields joined with `, `, or each value).
    struct Fields {
        var location, contentLocation, contentType, contentEncoding, contentDisposition, contentLength, openerPolicy: String?
        var refresh: [String] = []
        var link: [String] = []
        var contentSecurityPolicy: [String] = []

        init(_ fields: HTTPFields) {
            func join(_ current: inout String?, _ value: String) { current = current.map { $0 + ", " + value } ?? value }
            for field in fields {
                switch field.name {
                case .location: join(&location, field.value)
                case .contentLocation: join(&contentLocation, field.value)
                case .contentType: join(&contentType, field.value)
                case .contentEncoding: join(&contentEncoding, field.value)
                case .contentDisposition: join(&contentDisposition, field.value)
                case .contentLength: join(&contentLength, field.value)
                case SecurityHeaders.openerPolicy: openerPolicy = field.value
                case .contentSecurityPolicy: contentSecurityPolicy.append(field.value)
                case AnswerMapping.refresh: refresh.append(field.value)
                case AnswerMapping.link: link.append(field.value)
                default: break
                }
            }
        }
    }

    /// The transform of a rewritable body (`head.encoding` set): URLs rewritten and, with a nonce, the bar injected.
    /// `memberURI` is the page the member asked for: the bar's upgrade link brings them back to it, or on an app host
    /// (`gatewayBase` set) to the app's loading page (the gateway's paths cannot name a page of another host).
    func transform(
        _ head: Head, encoding: HTMLResponseTransform.Encoding, bar: GatewayBar, session: Session, app: AppConfiguration, memberURI: String,
        gatewayBase: String, urls: URLRewriter
    ) throws -> HTMLResponseTransform {
        let returnTo = gatewayBase.isEmpty ? memberURI : Paths.open(app.slug)
        let urls = app.rewrite == .none ? nil : urls
        if head.isStyleSheet, let urls {
            return try HTMLResponseTransform(
                rewriter: .css(CSSStreamRewriter(urls: urls)), encoding: encoding, limits: inflationLimits, compresses: head.compresses)
        }
        let injection = try head.nonce.map { try bar.bytes(nonce: $0, session: session, app: app, returnTo: returnTo, gatewayBase: gatewayBase) }
        var emptyBody: [UInt8]?
        if let status = head.emptyError, let nonce = head.nonce {
            // The gateway's page with the bar in it (its links are the gateway's own: not rewritten as the app's).
            var page = HTMLStreamRewriter(injection: injection, urls: nil)
            emptyBody = page.feed(Array(try emptyErrorPage(status: status, app: app, nonce: nonce, gatewayBase: gatewayBase).utf8)) + page.finish()
        }
        // The URL shim goes with the bar, before the app's scripts, on the gateway's own host only.
        let shim = gatewayBase.isEmpty ? head.nonce.flatMap { nonce in shimTags[app.slug].map { $0.before + Array(nonce.utf8) + $0.after } } : nil
        return try HTMLResponseTransform(
            rewriter: .html(HTMLStreamRewriter(injection: injection, urls: urls, headInjection: shim)), encoding: encoding, limits: inflationLimits,
            emptyBody: emptyBody, compresses: head.compresses)
    }

    /// What the member reads when an app answers a page with an error and nothing to show: which app, what it said in
    /// plain words, and the ways on (the app's start page, the web apps, whom to ask).
    func emptyErrorPage(status: HTTPResponse.Status, app: AppConfiguration, nonce: String, gatewayBase: String) throws -> String {
        let strings = renderer.strings
        let what = status == .notFound || status == .gone ? "app_error_missing" : status.code < 500 ? "app_error_refused" : "app_error_failed"
        let arguments = ["app": app.name, "status": "\(status.code)"]
        return try renderer.fragment(
            "app-error",
            [
                "heading": strings.text("\(what)_title", arguments), "message": strings.text("\(what)_text", arguments),
                "ask": strings.text("app_error_ask", arguments), "start": strings.text("app_error_start", arguments),
                "appStart": gatewayBase.isEmpty ? Paths.app(app.slug) + "/" : "/", "base": gatewayBase, "nonce": nonce,
            ])
    }

    /// A URL for the log: everything before its query or fragment.
    static func withoutQuery(_ url: String) -> String {
        String(url.prefix { $0 != "?" && $0 != "#" })
    }

    static let refresh = HTTPField.Name("Refresh")!
    static let link = HTTPField.Name("Link")!

    /// Whether the `charset` parameter (if any) names an encoding where ASCII bytes mean ASCII characters. Read as
    /// bytes: it is asked of every page.
    static func isASCIICompatible(contentType: String?) -> Bool {
        guard let contentType else { return true }
        let lowered = contentType.utf8.map(\.asciiLowercased)
        guard
            let parameter = lowered.indices.first(where: { lowered[$0...].starts(with: charsetParameter) }).map({ $0 + charsetParameter.count })
        else { return true }
        let quotes: Set<UInt8> = [UInt8(ascii: " "), UInt8(ascii: "\""), UInt8(ascii: "'")]
        var charset = lowered[parameter...].prefix { $0 != UInt8(ascii: ";") }.drop { quotes.contains($0) }
        while let last = charset.last, quotes.contains(last) { charset.removeLast() }
        if charset.starts(with: "utf-8".utf8) { return true }
        return !(asciiIncompatiblePrefixes.contains { charset.starts(with: $0) } || charset.elementsEqual("unicode".utf8))
    }

    /// `text/html` or `application/xhtml+xml`: a document the member reads, which gets the bar.
    static func isDocument(contentType: String?) -> Bool {
        guard let contentType else { return false }
        return starts(contentType, with: "text/html") || starts(contentType, with: "application/xhtml+xml")
    }

    static func starts(_ value: String, with lowercasePrefix: StaticString) -> Bool {
        value.utf8.starts(
            with: UnsafeBufferPointer(start: lowercasePrefix.utf8Start, count: lowercasePrefix.utf8CodeUnitCount), by: { $0.asciiLowercased == $1 })
    }

    static let charsetParameter = Array("charset=".utf8)
    static let asciiIncompatiblePrefixes = ["utf-16", "utf-32", "ucs-", "utf-7", "unicodefffe", "iso-10646"].map { Array($0.utf8) }

    /// A UTF-16 byte-order mark makes the browser read the document as UTF-16 whatever the header says.
    static func startsWithUTF16ByteOrderMark(_ bytes: some Collection<UInt8>) -> Bool {
        let first = Array(bytes.prefix(2))
        return first == [0xFE, 0xFF] || first == [0xFF, 0xFE]
    }
}
