/// A device of the member's Matrix account that the gateway holds for one gateway session.
public struct MatrixCredentials: Sendable, Equatable, Codable {
    public var userID: String
    public var deviceID: String
    public var accessToken: String

    public init(userID: String, deviceID: String, accessToken: String) {
        self.userID = userID
        self.deviceID = deviceID
        self.accessToken = accessToken
    }
}
