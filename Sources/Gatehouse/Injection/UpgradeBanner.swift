import HTTPTypes
import Hummingbird
import NIOConcurrencyHelpers

/// The upgrade banner shown on proxied pages to members at level `sso` (SPEC §2). Its "Add Features" leads to the
/// upgrade flow's entry (`RegistrationController`), which records the tap.
public struct UpgradeBanner: Sendable {
    let renderer: PageRenderer
    let events: EventRecorder
    private let templates = NIOLockedValueBox<[String: [String]]>([:])

    public init(renderer: PageRenderer, events: EventRecorder) {
        self.renderer = renderer
        self.events = events
    }

    /// The markup injected after `<body>`: an overlay with the "Add Features" action, a toast area, and the
    /// banner's own script and style carrying the response's nonce. `gatewayBase` is empty on the gateway's own
    /// host and the gateway's origin on an app host.
    public func html(nonce: String, returnTo: String, gatewayBase: String = "") throws -> String {
        let upgrade = Paths.upgradeEntry(from: "banner", returnTo: ReturnTarget(returnTo)?.path ?? Paths.portal)
        // Rendered once per base and cut at its placeholders; a response only fills in its nonce (base64url) and
        // the way back (percent-encoded, so only `&` needs escaping inside the attribute).
        let upgradeURL = (gatewayBase + upgrade).split(separator: "&", omittingEmptySubsequences: false).joined(separator: "&amp;")
        var html = ""
        for segment in try segments(gatewayBase: gatewayBase) {
            switch segment {
            case Self.noncePlaceholder: html += nonce
            case Self.upgradePlaceholder: html += upgradeURL
            default: html += segment
            }
        }
        return html
    }

    static let noncePlaceholder = "GATEHOUSE-NONCE-PLACEHOLDER"
    static let upgradePlaceholder = "GATEHOUSE-UPGRADE-URL-PLACEHOLDER"

    /// The rendered banner as text pieces and placeholders, in order.
    func segments(gatewayBase: String) throws -> [String] {
        if let cached = templates.withLockedValue({ $0[gatewayBase] }) { return cached }
        var rest = try renderer.fragment(
            "banner",
            [
                "nonce": Self.noncePlaceholder, "upgradeURL": Self.upgradePlaceholder,
                "script": gatewayBase + Paths.bannerScript, "style": gatewayBase + Paths.bannerStyle,
            ])[...]
        var segments: [String] = []
        while let next = [Self.noncePlaceholder, Self.upgradePlaceholder].compactMap({ rest.range(of: $0) }).min(by: { $0.lowerBound < $1.lowerBound }
        ) {
            segments.append(String(rest[..<next.lowerBound]))
            segments.append(String(rest[next]))
            rest = rest[next.upperBound...]
        }
        segments.append(String(rest))
        templates.withLockedValue { $0[gatewayBase] = segments }
        return segments
    }

    public func recordShown(sub: String) async {
        events.record(.upgradeBannerShown, sub: sub)
    }

    /// A top-level page load, not XHR/fetch, a frame, a download or a resource.
    public static func isDocumentNavigation(_ request: Request) -> Bool {
        if let destination = request.headers[HTTPField.Name("Sec-Fetch-Dest")!] { return destination == "document" }
        // Browsers without Fetch Metadata: a GET that accepts HTML and is not marked as script-initiated.
        return request.method == .get && request.headers[.accept]?.contains("text/html") == true
            && request.headers[HTTPField.Name("X-Requested-With")!] == nil
    }
}
