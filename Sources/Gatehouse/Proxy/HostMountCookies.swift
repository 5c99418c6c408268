/// The cookies an app host sets for itself, host-only there: the grant that stands for the member's session on that
/// host, and the state that binds a handoff to the browser that asked for it.
enum HostMountCookies {
    static let grant = "gatehouse_app"
    static let state = "gatehouse_app_state"
}
