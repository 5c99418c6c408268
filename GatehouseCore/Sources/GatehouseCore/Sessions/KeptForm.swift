import Foundation

/// A form a member posted to an app when it could not go through (their session had ended, or the path asked them to
/// prove themselves again), kept until they have: bound to the member (`sub`) and to the app and path it was for,
/// good for `lifetime`, taken once. Found by the SHA-256 of the random id the member's browser holds.
public struct KeptForm: Sendable, Codable, Equatable {
    public var idHash: String
    public var sub: String
    /// The app and its path (with the query) the form was posted to.
    public var slug: String
    public var target: String
    public var method: String
    public var contentType: String?
    public var body: Data
    public var createdAt: Date
    public var expiresAt: Date

    public init(
        idHash: String, sub: String, slug: String, target: String, method: String, contentType: String?, body: Data, createdAt: Date,
        expiresAt: Date
    ) {
        self.idHash = idHash
        self.sub = sub
        self.slug = slug
        self.target = target
        self.method = method
        self.contentType = contentType
        self.body = body
        self.createdAt = createdAt
        self.expiresAt = expiresAt
    }

    /// Time enough to sign in again, not to leave a form lying about.
    public static let lifetime: TimeInterval = 15 * 60
    /// How many a member may have waiting: the oldest goes first.
    public static let perMember = 5
}
