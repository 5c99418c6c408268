import Foundation

/// What development mode fills in where the configuration is silent: the built-in identity provider's path and
/// client, the demo apps with their chat features, and the hosts they are reached on. The composition root supplies
/// them (`DevelopmentDefaults.standard`), so that the loader knows neither the provider nor the demo apps.
public struct DevelopmentDefaults: Sendable {
    /// The built-in provider's issuer, as a path on the gateway's own origin.
    public var issuerPath: String
    public var clientID: String
    /// The demo apps, served on `port`.
    public var apps: @Sendable (_ port: Int) -> [AppConfiguration]
    /// Which demo apps are the chat features.
    public var features: FeaturesConfiguration
    public var appsDomain: String
    public var allowlist: [String]

    public init(
        issuerPath: String, clientID: String, apps: @escaping @Sendable (_ port: Int) -> [AppConfiguration],
        features: FeaturesConfiguration, appsDomain: String, allowlist: [String]
    ) {
        self.issuerPath = issuerPath
        self.clientID = clientID
        self.apps = apps
        self.features = features
        self.appsDomain = appsDomain
        self.allowlist = allowlist
    }
}
