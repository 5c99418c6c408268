import HTTPTypes
import Hummingbird

/// The upgrade banner shown on proxied pages to members at level `sso` (SPEC §2), and its events.
public struct UpgradeBanner: Sendable {
    let renderer: PageRenderer
    let events: EventRecorder

    public init(renderer: PageRenderer, events: EventRecorder) {
        self.renderer = renderer
        self.events = events
    }

    /// The markup injected after `<body>`: an overlay with the "Add Features" action, a toast area, and the
    /// banner's own script and style carrying the response's nonce.
    /// `gatewayBase` is empty on the gateway's own host and the gateway's origin on an app host.
    public func html(nonce: String, returnTo: String, gatewayBase: String = "") throws -> String {
        let upgrade = FormEncoding.url(Paths.upgrade, adding: [("from", "banner"), ("return_to", ReturnTarget(returnTo)?.path ?? Paths.portal)])
        return try renderer.fragment(
            "banner",
            [
                "nonce": nonce, "upgradeURL": gatewayBase + upgrade,
                "script": gatewayBase + Paths.bannerScript, "style": gatewayBase + Paths.bannerStyle,
            ])
    }

    public func recordShown(sub: String) async {
        await events.record(.upgradeBannerShown, sub: sub)
    }

    /// A top-level page load, not XHR/fetch, a frame, a download or a resource.
    public static func isDocumentNavigation(_ request: Request) -> Bool {
        if let destination = request.headers[HTTPField.Name("Sec-Fetch-Dest")!] { return destination == "document" }
        // Browsers without Fetch Metadata: a GET that accepts HTML and is not marked as script-initiated.
        return request.method == .get && request.headers[.accept]?.contains("text/html") == true
            && request.headers[HTTPField.Name("X-Requested-With")!] == nil
    }

    /// `/upgrade`: where "Add Features" leads. Records the tap and opens the Chats tab, whose onboarding prompt is
    /// the entry to the upgrade flow.
    public func addRoutes(to group: RouterGroup<SignedInRequestContext>) {
        group.get(RouterPath(stringLiteral: Paths.upgrade)) { request, context -> Response in
            if request.uri.queryParameters.get("from") == "banner" {
                await events.record(.upgradeBannerTapped, sub: context.session.identity.sub)
            }
            return Response(status: .seeOther, headers: [.location: Paths.chats, .cacheControl: "no-store"])
        }
    }
}
