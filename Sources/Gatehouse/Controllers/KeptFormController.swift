import Foundation
import GatehouseCore
import HTTPTypes
import Hummingbird

/// A kept form (`KeptForms`) after its member has proved themselves again: its page on the gateway says what happened
/// and sends it on (at once with JavaScript, by its button without: its own address, marked, which `ProxyController`
/// turns into the form), or lets the member discard it. Sending takes it from the store, so it reaches the app once,
/// and a second try says so.
struct KeptFormController: Sendable {
    let forms: KeptForms
    let renderer: PageRenderer
    let configuration: GatehouseConfiguration

    var catalog: AppCatalog { forms.catalog }

    func addRoutes(to group: RouterGroup<SignedInRequestContext>) {
        group.get(RouterPath(stringLiteral: Paths.keptForm)) { request, context in try await page(request, context) }
        group.post(RouterPath(stringLiteral: Paths.keptForm)) { request, context in try await discard(request, context) }
    }

    func page(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        let id = request.uri.queryParameters.get("id").map { String($0) } ?? ""
        guard id.utf8.count <= 128,
            let form = try await forms.store.find(idHash: TokenHash.hex(id), sub: context.session.identity.sub, now: forms.now()),
            let app = catalog.app(form.slug)
        else { throw KeptFormError.gone }
        var response = try renderer.page(
            "kept-form", title: renderer.strings["kept_form_title"],
            [
                "text": renderer.strings.text("kept_form_text", ["app": app.name]), "sendURL": forms.sendURL(id: id, form: form, app: app, publicOrigin: configuration.publicOrigin),
                "csrf": context.session.csrfToken, "id": id,
            ])
        response.headers[.cacheControl] = "no-store"
        return response
    }

    func discard(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        let form = try await FormPost.read(request, session: context.session, publicOrigin: configuration.publicOrigin)
        let id = form["id"] ?? ""
        if id.utf8.count <= 128 { _ = try await forms.store.take(idHash: TokenHash.hex(id), sub: context.session.identity.sub, now: forms.now()) }
        return Response(status: .seeOther, headers: [.location: Paths.portal, .cacheControl: "no-store"])
    }
}

/// A kept form that is no longer there: sent already, discarded, or kept too long.
enum KeptFormError: PresentableError {
    case gone

    var status: HTTPResponse.Status { .gone }
    var reason: String { "kept_form_gone" }
    var messageKey: String { "error_kept_form_gone" }
}
