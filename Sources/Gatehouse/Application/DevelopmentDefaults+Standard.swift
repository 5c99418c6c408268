import GatehouseCore

extension DevelopmentDefaults {
    /// Development mode as `gatehouse dev` runs it: the built-in identity provider and the demo apps.
    public static let standard = DevelopmentDefaults(
        issuerPath: Paths.developmentIdentityProvider,
        clientID: DevelopmentAccounts.clientID,
        apps: DemoApps.catalog(port:),
        features: FeaturesConfiguration(chats: DemoApps.chatsSlug, calls: DemoApps.callsSlug, stories: DemoApps.storiesSlug),
        appsDomain: "apps.localhost",
        allowlist: ["127.0.0.1", "localhost"]
    )
}
