import GatehouseCore

/// What kind of request a line of the request metrics (and of the request log) counts.
public enum RouteClass: String, Sendable, CaseIterable {
    case portal, signIn = "sign_in", proxy, upgrade, `static`, `operator`, health, development, other

    /// The class of a request for `path` on the gateway's own host; requests on an app host are all `proxy`.
    static func of(path: String) -> RouteClass {
        func under(_ prefix: String) -> Bool { path == prefix || path.hasPrefix(prefix + "/") }
        if under(Paths.appsPrefix) || under(Paths.appsOpen) { return .proxy }
        if under(Paths.publicAssets) { return .static }
        if under(Paths.upgrade) { return .upgrade }
        if under(Paths.operatorPrefix) { return .operator }
        if path == Paths.health || path == Paths.ready { return .health }
        if under(Paths.developmentIdentityProvider) || under(Paths.developmentPrefix) { return .development }
        if under(Paths.signIn) || under(Paths.authPrefix) || under(Paths.signOut) || under(Paths.signedOutPage) { return .signIn }
        if path == Paths.portal || under(Paths.openPrefix) || under(Paths.chats) || under(Paths.calls) || under(Paths.stories) { return .portal }
        return .other
    }
}
