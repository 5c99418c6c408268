import GatehouseCore
import HTTPTypes
import Hummingbird

extension GatehouseApplication {
    /// The gateway's own addresses and the methods each takes. Another method at one of them is answered `405` with
    /// `Allow` (the address exists; `404` would say it does not). A route registered with a method this table does not
    /// name stops the gateway at start (the router takes one handler per method), so the two cannot drift apart
    /// unnoticed; `RouterTests` checks the other direction.
    static func ownRoutes(callbackPath: String) -> [(path: String, methods: [HTTPRequest.Method])] {
        let get: [HTTPRequest.Method] = [.get]
        let post: [HTTPRequest.Method] = [.post]
        var routes: [(path: String, methods: [HTTPRequest.Method])] = [
            (Paths.signIn, get), (Paths.signInStart, get), (callbackPath, get), (Paths.signOut, [.get, .post]), (Paths.signedOutPage, get),
            (Paths.backChannelLogout, post), (Paths.forwardAuth, get), (Paths.health, get), (Paths.ready, get), (Paths.assertionKeys, get),
            (Paths.portal, get), (Paths.sessions, get), (Paths.sessions + "/end", post), (Paths.sessions + "/end-others", post),
            (Paths.language, post), (Paths.frame, [.get, .post]), (Paths.leaving, [.get, .post]), (Paths.upgrade, get), (Paths.upgradeResend, post),
            (Paths.upgradeCancel, post),
            (Paths.upgradeDone, get), (Paths.upgradeUsernameCheck, get), (Paths.operatorPrefix, get), (Paths.operatorFunnel, get),
            (Paths.operatorFunnel + "/days", get), (Paths.operatorPrefix + "/sessions", get), (Paths.operatorPrefix + "/apps", get),
            (Paths.operatorPrefix + "/refusals", get), (Paths.operatorMembers, get), (Paths.operatorMembersReset, post), (Paths.operatorAudit, get), (Paths.account, get),
            (Paths.accountProfile, post), (Paths.accountPhone, post), (Paths.accountPhoneCode, [.get, .post]), (Paths.accountPhoneCancel, post),
        ]
        routes += FeatureTab.allCases.filter { $0.path != Paths.portal }.map { ($0.path, get) }
        routes += RegistrationStep.allCases.map { (Paths.upgrade($0), [.get, .post]) }
        return routes
    }

    /// Registers the `405` answers for `ownRoutes` (HEAD goes with GET, as Hummingbird answers it).
    static func refuseOtherMethods(on router: Router<GatewayRequestContext>, callbackPath: String) {
        let candidates: [HTTPRequest.Method] = [.get, .head, .post, .put, .patch, .delete, .options]
        for (path, methods) in ownRoutes(callbackPath: callbackPath) {
            let allowed = methods.contains(.get) ? methods + [.head] : methods
            let allow = allowed.map(\.rawValue).joined(separator: ", ")
            for method in candidates where !allowed.contains(method) {
                router.on(RouterPath(stringLiteral: path), method: method) { _, _ -> Response in
                    throw HTTPError(.methodNotAllowed, headers: [.allow: allow])
                }
            }
        }
    }
}
