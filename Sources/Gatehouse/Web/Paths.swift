/// Every route of the gateway, named once; redirects are built from these.
public enum Paths {
    public static let signIn = "/signin"
    public static let signInStart = "/signin/start"
    public static let callback = "/auth/callback"
    public static let signOut = "/signout"
    public static let signedOutPage = "/signed-out"
    public static let portal = "/"
    public static let chats = "/chats"
    public static let calls = "/calls"
    public static let stories = "/stories"
    public static let health = "/healthz"
    public static let ready = "/readyz"
    public static let publicAssets = "/static"

    public static let appsPrefix = "/apps"
    public static let upgrade = "/upgrade"
    /// Step 2 of the host-mount handoff (see `HostMountController`).
    public static let appsOpen = "/apps-open"
    public static let bannerScript = "/static/gatehouse-banner.js"
    public static let bannerStyle = "/static/gatehouse-banner.css"

    /// Where a path-mounted app lives on the gateway, without a trailing slash.
    public static func app(_ slug: String) -> String { "\(appsPrefix)/\(slug)" }

    /// The built-in development identity provider lives under this prefix.
    public static let developmentIdentityProvider = "/dev-idp"
}
