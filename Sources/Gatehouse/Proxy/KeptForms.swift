import Foundation
import GatehouseCore
import GatehouseStorage
import HTTPTypes
import Hummingbird
import Logging

/// No lost work: a form a member posts to an app when their session has just run out, or when the path asks them to
/// prove themselves again, is kept server-side (`KeptForm`: sealed, bounded in size and time, bound to the member and
/// to the app and path, single use), and the member goes to sign in with the kept form's page as where they come
/// back to. That page says what happened and sends the form on (`KeptFormController`), once.
struct KeptForms: Sendable {
    let store: any KeptFormStore
    let catalog: AppCatalog
    /// The largest body kept (`proxy.maximum_request_body_bytes`, at most a mebibyte): a larger one is not kept.
    let maximumBytes: Int
    let now: @Sendable () -> Date

    init(store: any KeptFormStore, catalog: AppCatalog, maximumBytes: Int, now: @escaping @Sendable () -> Date = Date.init) {
        self.store = store
        self.catalog = catalog
        self.maximumBytes = min(maximumBytes, 1 << 20)
        self.now = now
    }

    /// A browser's form post (a page posting one of the form encodings), as against a script's request or an API
    /// call, which learn where to sign in from their `401` and can post again themselves.
    static func isFormPost(_ request: Request) -> Bool {
        guard request.method == .post, !ErrorAnswer.wantsJSON(accept: request.headers[.accept]) else { return false }
        if let mode = request.headers[GatewayPageIsolation.fetchMode], mode != "navigate" { return false }
        let type = request.headers[.contentType]?.lowercased() ?? ""
        return ["application/x-www-form-urlencoded", "multipart/form-data", "text/plain"].contains { type.hasPrefix($0) }
    }

    /// Keeps the form `request` posted to `rest` of `app` for the member `sub`, when it is a browser's form from one
    /// of the gateway's origins (another site's form is never kept to be sent later in the member's name); the kept
    /// form's page, or `nil`.
    func keep(_ request: Request, sub: String, app: AppConfiguration, rest: String, origins: OriginMapping, logger: Logger) async -> String? {
        guard Self.isFormPost(request),
            origins.refusal(origin: request.headers[.origin], fetchSite: request.headers[AppAccess.Forwarding.fetchSite]) == nil
        else { return nil }
        if let length = request.headers[.contentLength].flatMap({ Int($0) }), length > maximumBytes { return nil }
        guard let body = try? await request.body.collect(upTo: maximumBytes) else { return nil }
        let id = RandomToken.make()
        let created = now()
        let form = KeptForm(
            idHash: TokenHash.hex(id), sub: sub, slug: app.slug, target: rest, method: request.method.rawValue,
            contentType: request.headers[.contentType], body: Data(buffer: body), createdAt: created,
            expiresAt: created.addingTimeInterval(KeptForm.lifetime))
        do {
            try await store.keep(form)
        } catch {
            logger.warning("form not kept", metadata: ["app": .string(app.slug), "error": .string("\(error)")])
            return nil
        }
        logger.info("form kept for after the sign-in", metadata: ["app": .string(app.slug), "bytes": "\(body.readableBytes)"])
        return FormEncoding.url(Paths.keptForm, adding: [("id", id)])
    }

    /// Where the kept form `id` for `app` is sent from: the host its app is served on.
    func sendURL(id: String, app: AppConfiguration, publicOrigin: String) -> String {
        let origin = app.mount == .host ? catalog.appsDomain.map { $0.origin(of: app.slug) } : nil
        return (origin ?? publicOrigin) + FormEncoding.url(Paths.keptFormSend, adding: [("id", id)])
    }

    /// The request the form was, as the member's browser would post it now: its method, content type and body at
    /// the app's path, with the browser's own fields otherwise (cookies, language); from the gateway's own origin,
    /// which the form's was when it was kept.
    static func request(_ form: KeptForm, app: AppConfiguration, browser: Request, origin: String) -> Request {
        var fields = browser.headers
        for name: HTTPField.Name in [.contentType, .contentLength, .transferEncoding, .origin, .referer, AppAccess.Forwarding.fetchSite] {
            fields[name] = nil
        }
        fields[.origin] = origin
        if let type = form.contentType { fields[.contentType] = type }
        fields[.contentLength] = String(form.body.count)
        let path = app.mount == .path ? Paths.app(app.slug) + form.target : form.target
        let head = HTTPRequest(
            method: HTTPRequest.Method(form.method) ?? .post, scheme: browser.head.scheme, authority: browser.head.authority, path: path,
            headerFields: fields)
        return Request(head: head, body: RequestBody(buffer: ByteBuffer(bytes: form.body)))
    }
}
