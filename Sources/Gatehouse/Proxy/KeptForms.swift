import Foundation
import GatehouseCore
import GatehouseStorage
import HTTPTypes
import Hummingbird
import Logging

/// No lost work: a form a member posts to an app when their session has just run out, or when the path asks them to
/// prove themselves again, is kept server-side (`KeptForm`: sealed, bounded in size and time, bound to the member and
/// to the app and path, single use), and the member goes to sign in with the kept form's page as where they come
/// back to. That page says what happened and sends the form on (`KeptFormController`), once: a `GET` of the form's own
/// address marked with its id (`Paths.keptFormMarker`) becomes the form's `POST`, so that the app's answer is at the
/// address it was made for, relative links and all.
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

    /// The origin `app`'s pages are served on: its app host's, or the gateway's.
    func origin(of app: AppConfiguration, publicOrigin: String) -> String {
        (app.mount == .host ? catalog.appsDomain.map { $0.origin(of: app.slug) } : nil) ?? publicOrigin
    }

    /// Where the kept form `id` is sent from: its own address, marked.
    func sendURL(id: String, form: KeptForm, app: AppConfiguration, publicOrigin: String) -> String {
        let path = app.mount == .host && catalog.appsDomain != nil ? form.target : Paths.app(app.slug) + form.target
        return origin(of: app, publicOrigin: publicOrigin) + FormEncoding.url(path, adding: [(Paths.keptFormMarker, id)])
    }

    /// Whether `rest` (a path with its query) carries the marker: one look for its name, in the query only.
    static func isMarked(_ rest: String) -> Bool {
        guard let question = rest.utf8.firstIndex(of: UInt8(ascii: "?")) else { return false }
        let query = rest.utf8[rest.utf8.index(after: question)...]
        return query.starts(with: markerBytes.dropFirst()) || query.firstRange(of: markerBytes) != nil
    }

    private static let markerBytes = Array(("&" + Paths.keptFormMarker + "=").utf8)

    /// The id `rest` is marked with, and `rest` without the marker (the form's address), when it is marked.
    static func marked(_ rest: String) -> (id: String, target: String)? {
        guard isMarked(rest), let question = rest.firstIndex(of: "?") else { return nil }
        var id: String?
        let kept = rest[rest.index(after: question)...].split(separator: "&", omittingEmptySubsequences: false).filter { pair in
            guard pair.hasPrefix(Paths.keptFormMarker + "=") else { return true }
            id = String(pair.dropFirst(Paths.keptFormMarker.count + 1))
            return false
        }
        guard let id, !id.isEmpty, id.utf8.count <= 128 else { return nil }
        return (id, String(rest[..<question]) + (kept.isEmpty ? "" : "?" + kept.joined(separator: "&")))
    }

    /// The member's form `id`, taken from the store when it was kept for `target` of `app`; `nil` when it was sent
    /// already, discarded, kept too long, or is another's or for another address.
    func take(id: String, sub: String, app: AppConfiguration, target: String) async throws -> KeptForm? {
        guard let found = try await store.find(idHash: TokenHash.hex(id), sub: sub, now: now()), found.slug == app.slug, found.target == target
        else { return nil }
        return try await store.take(idHash: found.idHash, sub: sub, now: now())
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
