/// Every route of the gateway, named once; redirects are built from these.
public enum Paths {
    public static let signIn = "/signin"
    public static let signInStart = "/signin/start"
    /// Where a registered member enters their upgrade PIN for a path that asks for it (`require.pin_age_seconds`).
    public static let pinCheck = "/signin/pin"
    /// What the identity provider calls: the callback (by default) and back-channel logout.
    public static let authPrefix = "/auth"
    public static let callback = authPrefix + "/callback"
    /// Where the identity provider sends back-channel logout tokens.
    public static let backChannelLogout = authPrefix + "/backchannel-logout"
    public static let signOut = "/signout"
    public static let signedOutPage = "/signed-out"
    public static let portal = "/"
    public static let chats = "/chats"
    public static let calls = "/calls"
    public static let stories = "/stories"
    public static let health = "/healthz"
    public static let ready = "/readyz"
    /// The public keys of identity assertions (a JWK set, RFC 7517 §5).
    public static let assertionKeys = "/.well-known/jwks.json"
    /// The member's sessions: the list, and the forms that end them.
    public static let sessions = "/account/sessions"
    /// The form that keeps the member's choice of language in the session.
    public static let language = "/account/language"
    /// The page a link leaving the organization's apps goes through (`Departures`).
    public static let leaving = "/leaving"
    /// Forward-auth for an organization's own ingress.
    public static let forwardAuth = "/auth/verify"
    public static let publicAssets = "/static"
    /// Where browsers look for a site's icon when a page names none: the gateway's, so that an app's page on a path
    /// mount (the gateway's origin) gets one too.
    public static let favicon = "/favicon.ico"
    /// The gateway's icon among its files (`Public/favicon.png`).
    public static let faviconAsset = publicAssets + "/favicon.png"

    public static let appsPrefix = "/apps"
    /// The upgrade flow: its entry, one page per step, and the rest.
    public static let upgrade = "/upgrade"
    public static func upgrade(_ step: RegistrationStep) -> String { "\(upgrade)/\(step.rawValue)" }
    public static let upgradeResend = "/upgrade/code/resend"
    public static let upgradeUsernameCheck = "/upgrade/username/check"
    public static let upgradeCancel = "/upgrade/cancel"
    public static let upgradeDone = "/upgrade/done"
    /// Development mode's own pages live under this prefix.
    public static let developmentPrefix = "/dev"
    /// Development mode: the codes the development sender delivered.
    public static let developmentInbox = developmentPrefix + "/inbox"
    /// Operators' endpoints live under this prefix.
    public static let operatorPrefix = "/operator"
    /// Operators: the funnel report as JSON.
    public static let operatorFunnel = operatorPrefix + "/funnel"
    /// The account after the upgrade: the profile, and a new phone number confirmed with a code.
    public static let account = "/account"
    public static let accountProfile = account + "/profile"
    public static let accountPhone = account + "/phone"
    public static let accountPhoneCode = accountPhone + "/code"
    public static let accountPhoneCancel = accountPhone + "/cancel"
    /// A registered member found, and their upgrade reset.
    public static let operatorMembers = operatorPrefix + "/members"
    public static let operatorMembersReset = operatorMembers + "/reset"
    /// The audit trail, filtered (`OperatorAuditController`).
    public static let operatorAudit = operatorPrefix + "/audit"
    /// The console's app catalog: the list, a new app's form, an app's form, saving one, and enabling, disabling or
    /// removing one (`OperatorCatalogController`).
    public static let operatorCatalog = operatorPrefix + "/catalog"
    public static let operatorCatalogNew = operatorCatalog + "/new"
    public static let operatorCatalogEdit = operatorCatalog + "/edit"
    public static let operatorCatalogSave = operatorCatalog + "/save"
    public static let operatorCatalogState = operatorCatalog + "/state"
    public static let operatorCatalogRestore = operatorCatalog + "/restore"

    // The gateway's own chat (`ChatController`): rooms by query (`?id=!room:server`), never in the path.
    public static let chatRoom = chats + "/room"
    public static let chatHistory = chats + "/history"
    public static let chatNew = chats + "/new"
    public static let chatEvents = chats + "/events"
    /// The unread count on the Chats tab, asked by the gateway's tabs and by the bar on every app's page, on the page's
    /// own host (an app host answers it on its grant): beside the bar's other endpoint, not a gateway page.
    public static let chatUnread = "/__gatehouse/unread"
    public static let chatSend = chats + "/send"
    public static let chatRead = chats + "/read"
    public static let chatMembership = chats + "/membership"
    public static let chatDirect = chats + "/direct"
    public static let chatGroup = chats + "/group"
    /// Edits the member's own message (`room`, `event`, `text`), or deletes it (`room`, `event`).
    public static let chatEdit = chats + "/edit"
    public static let chatDelete = chats + "/delete"
    /// What a message says, for its notification (`room`, `id`), asked by a gateway page's script with its token.
    public static let chatNotice = chats + "/notice"
    /// Mutes or unmutes a chat (`room`, `muted` = `1` or `0`).
    public static let chatMute = chats + "/mute"
    /// Puts a reaction on a message (`room`, `event`, `key`), or takes the member's own with that key back.
    public static let chatReact = chats + "/react"
    /// Says the member is typing in a room, or stopped (`room`, `typing` = `1` or `0`).
    public static let chatTyping = chats + "/typing"
    /// Changes a group (`room`, `action`): `rename` (`name`), `topic` (`topic`), `add` (`username`), `remove` and
    /// `admin` (`user`).
    public static let chatManage = chats + "/manage"
    /// Search: chats, people and messages (`q`; `room` for one room's messages, `next` for more).
    public static let chatSearch = chats + "/search"
    /// The browser's push subscription for when no gateway page is open (JSON from the Chats page's script).
    public static let chatPush = chats + "/push"
    /// The Matrix push gateway API the homeserver's pusher for each member posts to (`PushGatewayController`).
    public static let pushGateway = "/_matrix/push/v1/notify"
    /// The service worker that shows what is pushed (a fixed name: its registration is kept across builds).
    public static let pushWorker = "/static/gatehouse-push.js"
    /// The push worker's scope: a path of no page, so that it controls none.
    public static let pushWorkerScope = "/static/push/"
    // The gateway's own calls (`CallController`): a call's page by query (`?room=` to call, `?id=` to answer).
    public static let callStart = calls + "/start"
    public static let callPage = calls + "/call"
    public static let callServers = calls + "/ice"
    public static let callSignal = calls + "/signal"
    public static let callEvents = calls + "/events"
    /// What every page of the member's hears, as a stream (the unread count, what to notify them of, the calls
    /// ringing), and declining a call: asked by the bar on every app's page and by the gateway's pages, on the page's
    /// own host (an app host answers it on its grant), beside the unread count.
    public static let live = "/__gatehouse/live"
    // Stories (`StoryController`).
    public static let storyPost = stories + "/post"
    public static let storyView = stories + "/view"
    /// The stories of a room the member looked at, marked seen by the view's script (a GET sends nothing).
    public static let storySeen = stories + "/seen"
    /// A person's stories the member was invited to, opened (their story room joined) by the Stories page's form.
    public static let storyOpen = stories + "/open"
    /// Step 2 of the host-mount handoff (see `HostMountController`).
    public static let appsOpen = "/apps-open"
    /// "Loading <app>" at once, then the app: what the portal's tiles open.
    public static let openPrefix = "/open"
    public static func open(_ slug: String) -> String { "\(openPrefix)/\(slug)" }
    /// The gateway bar's files, which proxied pages load (`GatewayBar`), and where it keeps the member's choices
    /// (on the gateway's host and on every app host alike).
    public static let barScript = "/static/gatehouse-bar.js"
    public static let barStyle = "/static/gatehouse-bar.css"
    public static let toastsScript = "/static/gatehouse-toasts.js"
    /// What every page of the member's hears (`LiveFeed`): the count, notifications and sounds, the ring of a call; in
    /// the bar and on the gateway's pages.
    public static let liveScript = "/static/gatehouse-live.js"
    /// Moves the bar out of `<body>` before the app's scripts run, and keeps it there (not deferred).
    public static let barKeeperScript = "/static/gatehouse-bar-keeper.js"
    /// The warning before a session ends (`session.warning_seconds`), on the gateway's pages and in the bar.
    public static let sessionScript = "/static/gatehouse-session.js"
    /// The script that maps the URLs an app's JavaScript builds to its mount (`apps[].rewrite: full`).
    public static let urlShimScript = "/static/gatehouse-shim.js"
    public static let frame = "/__gatehouse/frame"
    /// A form kept while its member signed in again (`KeptForm`): its page on the gateway. It is sent from its own
    /// address, marked with `keptFormMarker`.
    public static let keptForm = "/kept-form"
    /// The query parameter that marks a `GET` of an app's address as the sending of a kept form (`KeptForms`).
    public static let keptFormMarker = "gatehouse-kept-form"
    /// Where a sign-in to stay signed in (opened in a new tab) ends: it tells the member's other tabs.
    public static let sessionRenewed = "/session/renewed"

    /// Where "Add Features" leads: the flow's entry, told where the member came from and where they were heading.
    public static func upgradeEntry(from origin: String, returnTo: String) -> String {
        FormEncoding.url(upgrade, adding: [("from", origin), ("return_to", returnTo)])
    }

    /// Where a path-mounted app lives on the gateway, without a trailing slash.
    public static func app(_ slug: String) -> String { "\(appsPrefix)/\(slug)" }

    /// The built-in development identity provider lives under this prefix.
    public static let developmentIdentityProvider = "/dev-idp"
}
