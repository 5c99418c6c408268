import GatehouseCore
import GatehouseStorage
import Hummingbird

/// `POST /account/language` (the account menu's languages): keeps the member's choice in the session, on every
/// replica and every app host, then goes back to the page the menu was on. A language Gatehouse does not have is a
/// bad request, never a silent fallback.
struct LanguageController: Sendable {
    let sessions: any SessionStore
    let languages: Languages
    let publicOrigin: String

    func addRoutes(to group: RouterGroup<SignedInRequestContext>) {
        group.post(RouterPath(stringLiteral: Paths.language)) { request, context in try await choose(request, session: context.session) }
    }

    func choose(_ request: Request, session: Session) async throws -> Response {
        let form = try await FormPost.read(request, session: session, publicOrigin: publicOrigin)
        guard let language = form["language"], languages.offered.contains(language) else {
            throw RequestError.badRequest("unknown language")
        }
        try await sessions.setFrame(FramePreferences(language: language), sessionID: session.id)
        let back = form["return_to"].flatMap(ReturnTarget.init)?.path ?? Paths.portal
        return Response(status: .seeOther, headers: [.location: back, .cacheControl: "no-store"])
    }
}
