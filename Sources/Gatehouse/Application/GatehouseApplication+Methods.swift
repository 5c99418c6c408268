import GatehouseCore
import HTTPTypes
import Hummingbird

extension GatehouseApplication {
    /// The gateway's own addresses (every route registered at a fixed path: no capture, no wildcard) and the methods
    /// each takes, read from the router after every controller registered its routes: the `405` table cannot drift
    /// from the routes, because it is made of them.
    static func ownRoutes(of router: Router<GatewayRequestContext>) -> [(path: String, methods: [HTTPRequest.Method])] {
        var methods: [String: [HTTPRequest.Method]] = [:]
        for route in router.routes where route.path.components.allSatisfy({ $0 == .path(Substring($0.description)) }) {
            methods[route.path.description, default: []].append(route.method)
        }
        return methods.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    /// Answers another method at one of `ownRoutes` with `405` and `Allow` (the address exists; `404` would say it does
    /// not). HEAD goes with GET, as Hummingbird answers it.
    static func refuseOtherMethods(on router: Router<GatewayRequestContext>) {
        let candidates: [HTTPRequest.Method] = [.get, .head, .post, .put, .patch, .delete, .options]
        for (path, methods) in ownRoutes(of: router) {
            let allowed = allowed(methods)
            let allow = allowed.map(\.rawValue).joined(separator: ", ")
            for method in candidates where !allowed.contains(method) {
                router.on(RouterPath(stringLiteral: path), method: method) { _, _ -> Response in
                    throw HTTPError(.methodNotAllowed, headers: [.allow: allow])
                }
            }
        }
    }

    /// What `Allow` names for a route of `methods`, in the order they were registered.
    static func allowed(_ methods: [HTTPRequest.Method]) -> [HTTPRequest.Method] {
        methods.contains(.get) && !methods.contains(.head) ? methods + [.head] : methods
    }
}
