import Foundation
import GatehouseCore

/// An HTTP endpoint the gateway POSTs JSON to: the code sender's API or the provisioning webhook.
public struct HTTPEndpointConfiguration: Sendable {
    public var url: URL
    /// The header carrying `authorization` (an API key header for some SMS services).
    public var authorizationHeader: String
    /// Only from the environment or a `_FILE`.
    public var authorization: String?
    public var timeoutSeconds: Int
    /// The authorities its certificate must chain to instead of the system's, and a client certificate (`<prefix>.tls`).
    public var tls: AppTLSConfiguration?

    public static let defaultAuthorizationHeader = "Authorization"
    public static let defaultTimeoutSeconds = 10

    public init(
        url: URL, authorizationHeader: String = defaultAuthorizationHeader, authorization: String? = nil, timeoutSeconds: Int = defaultTimeoutSeconds,
        tls: AppTLSConfiguration? = nil
    ) {
        self.tls = tls
        self.url = url
        self.authorizationHeader = authorizationHeader
        self.authorization = authorization
        self.timeoutSeconds = timeoutSeconds
    }
}

public struct ProvisioningConfiguration: Sendable {
    /// No endpoint: no webhook is called.
    public var endpoint: HTTPEndpointConfiguration?
    public var maximumAttempts: Int
    /// The pause after the first failure; it doubles with every further one, up to an hour.
    public var retryBaseSeconds: Double
    public var pollSeconds: Double

    public init(endpoint: HTTPEndpointConfiguration? = nil, maximumAttempts: Int = 8, retryBaseSeconds: Double = 30, pollSeconds: Double = 5) {
        self.endpoint = endpoint
        self.maximumAttempts = maximumAttempts
        self.retryBaseSeconds = retryBaseSeconds
        self.pollSeconds = pollSeconds
    }
}

/// The upgrade flow (product §5).
public struct RegistrationConfiguration: Sendable {
    public enum SenderKind: String, Sendable, CaseIterable {
        /// The log and the development inbox page.
        case log
        /// POST to `codeSenderEndpoint`.
        case http
    }
    /// `nil` outside development mode is a configuration problem: codes must go somewhere real.
    public var codeSender: SenderKind?
    public var codeSenderEndpoint: HTTPEndpointConfiguration?
    public var rules: VerificationRules
    public var provisioning: ProvisioningConfiguration
    public var pinBcryptCost: Int

    public init(
        codeSender: SenderKind? = .log, codeSenderEndpoint: HTTPEndpointConfiguration? = nil, rules: VerificationRules = .init(),
        provisioning: ProvisioningConfiguration = .init(), pinBcryptCost: Int = 12
    ) {
        self.codeSender = codeSender
        self.codeSenderEndpoint = codeSenderEndpoint
        self.rules = rules
        self.provisioning = provisioning
        self.pinBcryptCost = pinBcryptCost
    }
}

/// Which apps the Chats, Calls and Stories tabs open for registered members (app slugs).
public struct FeaturesConfiguration: Sendable, Equatable {
    public var chats: String?
    public var calls: String?
    public var stories: String?

    public init(chats: String? = nil, calls: String? = nil, stories: String? = nil) {
        self.chats = chats
        self.calls = calls
        self.stories = stories
    }

    /// The app behind a chat feature's tab (none behind Web Apps).
    public func slug(for tab: FeatureTab) -> String? {
        switch tab {
        case .webApps: nil
        case .chats: chats
        case .calls: calls
        case .stories: stories
        }
    }
}
