import GatehouseCore
import HTTPTypes
import Hummingbird

/// `/leaving?to=<url>`: where a link, form or refresh of an app's page that leads outside the allowlist goes instead
/// (`Departures`). The page names the destination (its host also as browsers send it when it holds letters of other
/// alphabets), leads back to the app the member came from, and offers to continue only with `proxy.leaving:
/// interstitial`. A form sent here is not passed on: its fields are never read. The continue link carries no referrer.
struct LeavingController: Sendable {
    let renderer: PageRenderer
    let leaving: ProxyConfiguration.Leaving
    let publicOrigin: String

    func addRoutes(to group: RouterGroup<GatewayRequestContext>) {
        group.get(RouterPath(stringLiteral: Paths.leaving)) { request, _ in try page(request) }
        group.post(RouterPath(stringLiteral: Paths.leaving)) { request, _ in try page(request) }
    }

    func page(_ request: Request) throws -> Response {
        guard let to = request.uri.queryParameters.get("to"), let destination = Departures.destination(to) else {
            throw RequestError.badRequest("leaving without an http(s) destination")
        }
        let strings = renderer.strings
        let (host, ascii) = Departures.shownHost(destination.host)
        var values: [String: Any] = [
            "destination": destination.url, "text": strings.text("leaving_text", ["host": host]),
            "continueLabel": strings.text("leaving_continue", ["host": ascii ?? host]), "continueHint": strings["leaving_continue_hint"],
        ]
        if let ascii {
            values["idnNote"] = strings.text("leaving_idn", ["ascii": ascii])
        }
        if leaving == .block {
            values["blocked"] = true
            values["blockedText"] = strings.text("leaving_blocked", ["host": host])
        }
        if request.method == .post { values["posted"] = true }
        if let back = Self.backToApp(referer: request.headers[.referer], publicOrigin: publicOrigin) { values["back"] = back }
        var response = try renderer.page("leaving", title: strings["leaving_title"], values)
        // The destination is in this page's URL: it goes nowhere else.
        response.headers[SecurityHeaders.referrerPolicy] = "no-referrer"
        return response
    }

    /// The app page the member came from, when the browser says (a path of an app on the gateway's own host).
    static func backToApp(referer: String?, publicOrigin: String) -> String? {
        guard let referer, referer.hasPrefix(publicOrigin + Paths.appsPrefix + "/") else { return nil }
        return ReturnTarget(String(referer.dropFirst(publicOrigin.count)))?.path
    }
}
