import HTTPTypes
import Hummingbird

/// What a request for an app's resource gets without the member's session when no member could follow a sign-in from
/// it: a script's fetch, an image, a web app manifest (browsers fetch one without cookies unless the page says
/// `crossorigin="use-credentials"`, which the gateway's rewriting adds). A redirect to the sign-in would be refused by
/// the page's policy or answered with a page the resource cannot be: an error in the console of the app's page. A
/// navigation (or a request without fetch metadata) still goes to the sign-in.
enum AnonymousAppRequest {
    /// The answer, or `nil` for a navigation.
    static func answer(_ headers: HTTPFields, message: String) -> Response? {
        guard let mode = headers[GatewayPageIsolation.fetchMode], mode != "navigate" else { return nil }
        if headers[GatewayPageIsolation.fetchDest] == "manifest" {
            // A manifest that names nothing: the browser installs nothing and says nothing; the member's own request
            // (with the session) gets the app's.
            return Response(
                status: .ok, headers: [.contentType: "application/manifest+json", .cacheControl: "no-store"],
                body: .init(byteBuffer: ByteBuffer(string: "{}")))
        }
        return ErrorAnswer.json(status: .unauthorized, reason: "sign_in_required", message: message, requestID: nil).response
    }
}
