import Foundation
import GatehouseCore
import HTTPTypes
import Hummingbird

/// What the URL shim cannot reach on a path mount an app was not told: a URL its scripts build at the gateway's root
/// (`location.href = "/tree"`, an image a template string names, a worker's `importScripts("/x.js")`). Such a request
/// finds none of the gateway's addresses; when its `Referer` is a page of such an app, it is sent on to the app's
/// mount (`307`, which keeps the method and body), where it was meant to go. Anything else stays `404`.
public struct StrayAppPathMiddleware: RouterMiddleware {
    public typealias Context = GatewayRequestContext
    /// The mount prefixes (`/apps/<slug>`) whose pages' strays are sent on.
    let prefixes: [String]
    let publicOrigin: String

    init(catalog: AppCatalog, publicOrigin: String) {
        prefixes = catalog.apps.filter(\.isRewrittenToItsMount).map { Paths.app($0.slug) }
        self.publicOrigin = publicOrigin
    }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound {
            guard let prefix = mount(of: request) else { throw error }
            return Response(status: .temporaryRedirect, headers: [.location: prefix + request.uri.description, .cacheControl: "no-store"])
        }
    }

    /// The mount whose page sent `request`, when the request is for a root path of the gateway's that no app would
    /// ever own (the mounts themselves and the gateway's files are never sent on).
    func mount(of request: Request) -> String? {
        let path = request.uri.path
        guard !prefixes.isEmpty, path.hasPrefix("/"), !path.hasPrefix(Paths.appsPrefix + "/"), !path.hasPrefix("/static/"),
            let referer = request.headers[.referer], referer.hasPrefix(publicOrigin + "/")
        else { return nil }
        let refererPath = referer.dropFirst(publicOrigin.count)
        return prefixes.first { refererPath.hasPrefix($0 + "/") }
    }
}
