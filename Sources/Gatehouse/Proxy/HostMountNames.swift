/// The cookies an app host sets for itself, host-only there: the grant that stands for the member's session on that
/// host, and the state that binds a handoff to the browser that asked for it.
enum HostMountCookies {
    static let grant = "gatehouse_app"
    static let state = "gatehouse_app_state"
}

/// The gateway's own paths on an app host, which are never the app's: where a handoff's code is redeemed, and where
/// sign-out passes on each app host the session was let into (`HostMountController.signOutChain`).
enum HostMountPaths {
    static let handoff = "/__gatehouse/handoff"
    static let signedOut = "/__gatehouse/signed-out"
}
