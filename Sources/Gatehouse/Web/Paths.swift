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

    /// The built-in development identity provider lives under this prefix.
    public static let developmentIdentityProvider = "/dev-idp"
}
