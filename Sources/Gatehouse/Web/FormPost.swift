import GatehouseCore
import Hummingbird

/// Forms posted by the gateway's own pages: from its own origin (when the browser names one) and carrying the
/// session's CSRF token. Anything else is refused before a field is read.
enum FormPost {
    static func read(_ request: Request, session: Session, publicOrigin: String, limit: Int = 16 * 1024) async throws -> [String: String] {
        if let origin = request.headers[.origin], origin != publicOrigin {
            throw RequestError.forbidden("form from origin \(origin)")
        }
        let form = FormEncoding.decode(String(buffer: try await request.body.collect(upTo: limit)))
        guard let token = form["csrf"], constantTimeEquals(token, session.csrfToken) else {
            throw RequestError.forbidden("form without a valid CSRF token")
        }
        return form
    }
}
