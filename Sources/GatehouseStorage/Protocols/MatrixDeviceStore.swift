import Foundation
import GatehouseCore

/// The Matrix devices the gateway holds for its sessions, one per gateway session (whichever replica made it), the
/// access token sealed. A device outlives its session only until the gateway logs it out: the rows whose session is
/// gone, or no longer registered, are what `ending` lists.
public protocol MatrixDeviceStore: Sendable {
    /// Records the device made for its session; `false` when the session has one already (another replica's login
    /// came first: this one is to be logged out again).
    func insert(_ device: StoredMatrixDevice) async throws -> Bool
    func device(sessionID: String) async throws -> StoredMatrixDevice?
    /// Devices whose gateway session is gone (signed out, expired, ended elsewhere, by back-channel logout) or is no
    /// longer at level `registered` (an operator's reset), at most `limit`.
    func ending(limit: Int) async throws -> [StoredMatrixDevice]
    /// Every device held, for the reaper's full pass (the member's roles are read from each session).
    func all(limit: Int) async throws -> [StoredMatrixDevice]
    /// Forgets the session's device `deviceID` (a newer device of the session, made meanwhile, stays).
    func delete(sessionID: String, deviceID: String) async throws
    /// Keeps the browser's push subscription with the session's device `deviceID` (`nil`: forgets it); `false` when
    /// that device is no longer held.
    func setPush(sessionID: String, deviceID: String, _ push: StoredPush?) async throws -> Bool
    /// The device whose push subscription has the key (`StoredPush.keyHash`), for the homeserver's pushes.
    func device(pushKeyHash: String) async throws -> StoredMatrixDevice?
}

/// A browser's push subscription, kept with the Matrix device of its gateway session (and so ended with it): the
/// key the homeserver's pusher names (only its hash is stored), the subscription (sealed), whether the member
/// allows the message's text in what is pushed, and the language of what is pushed (the member's at subscribing).
public struct StoredPush: Sendable, Equatable, Codable {
    public var keyHash: String
    public var subscription: WebPush.Subscription
    public var previews: Bool
    public var language: String

    public init(keyHash: String, subscription: WebPush.Subscription, previews: Bool, language: String) {
        self.keyHash = keyHash
        self.subscription = subscription
        self.previews = previews
        self.language = language
    }
}

public struct StoredMatrixDevice: Sendable, Equatable {
    public var sessionID: String
    /// The member's account (the SSO subject).
    public var sub: String
    public var userID: String
    public var deviceID: String
    public var accessToken: String
    public var createdAt: Date
    /// The browser's push subscription, when the member turned pushes on in this session.
    public var push: StoredPush?

    public init(sessionID: String, sub: String, userID: String, deviceID: String, accessToken: String, createdAt: Date, push: StoredPush? = nil) {
        self.sessionID = sessionID
        self.sub = sub
        self.userID = userID
        self.deviceID = deviceID
        self.accessToken = accessToken
        self.createdAt = createdAt
        self.push = push
    }
}
