import Foundation

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
}

public struct StoredMatrixDevice: Sendable, Equatable {
    public var sessionID: String
    /// The member's account (the SSO subject).
    public var sub: String
    public var userID: String
    public var deviceID: String
    public var accessToken: String
    public var createdAt: Date

    public init(sessionID: String, sub: String, userID: String, deviceID: String, accessToken: String, createdAt: Date) {
        self.sessionID = sessionID
        self.sub = sub
        self.userID = userID
        self.deviceID = deviceID
        self.accessToken = accessToken
        self.createdAt = createdAt
    }
}
