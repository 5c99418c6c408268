import Foundation
import GatehouseCore
import HTTPTypes
import Hummingbird

/// A kept form (`KeptForms`) after its member has proved themselves again: its page on the gateway says what happened
/// and sends it on (at once with JavaScript, by its button without), or lets the member discard it; sending takes it
/// from the store, so it reaches the app once, and a second try says so.
struct KeptFormController: Sendable {
    let forms: KeptForms
    let proxy: ProxyController
    let renderer: PageRenderer
    let configuration: GatehouseConfiguration

    var catalog: AppCatalog { forms.catalog }

    func addRoutes(to group: RouterGroup<SignedInRequestContext>) {
        group.get(RouterPath(stringLiteral: Paths.keptForm)) { request, context in try await page(request, context) }
        group.post(RouterPath(stringLiteral: Paths.keptForm)) { request, context in try await discard(request, context) }
        group.get(RouterPath(stringLiteral: Paths.keptFormSend)) { request, context in try await send(request, context, onHostOf: nil) }
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
                "text": renderer.strings.text("kept_form_text", ["app": app.name]), "sendURL": forms.sendURL(id: id, app: app, publicOrigin: configuration.publicOrigin),
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

    /// Sends the kept form to its app, on the host the app is served on (`app` for an app host, `nil` for the
    /// gateway's): the app's answer is the member's.
    func send(_ request: Request, _ context: SignedInRequestContext, onHostOf hostApp: AppConfiguration?) async throws -> Response {
        let id = request.uri.queryParameters.get("id").map { String($0) } ?? ""
        let sub = context.session.identity.sub
        guard id.utf8.count <= 128, let found = try await forms.store.find(idHash: TokenHash.hex(id), sub: sub, now: forms.now()),
            let app = catalog.app(found.slug)
        else { throw KeptFormError.gone }
        // Sent from where its app is served, and nowhere else.
        let origin: String
        if let hostApp, let appsDomain = catalog.appsDomain {
            guard hostApp.slug == app.slug else { throw KeptFormError.gone }
            origin = appsDomain.origin(of: app.slug)
        } else {
            guard catalog.isProxiedOnPaths(app) else { throw KeptFormError.gone }
            origin = configuration.publicOrigin
        }
        guard let form = try await forms.store.take(idHash: found.idHash, sub: sub, now: forms.now()) else { throw KeptFormError.gone }
        context.logger.info("kept form sent", metadata: ["app": .string(app.slug)])
        return try await proxy.forward(
            KeptForms.request(form, app: app, browser: request, origin: origin), context: context, app: app, rest: form.target)
    }
}

/// A kept form that is no longer there: sent already, discarded, or kept too long.
enum KeptFormError: PresentableError {
    case gone

    var status: HTTPResponse.Status { .gone }
    var reason: String { "kept_form_gone" }
    var messageKey: String { "error_kept_form_gone" }
}
