import Foundation

/// An app an operator added in the console: its entry as the configuration file's `apps[]` element (JSON text), and
/// whether it is served. `version` grows with each change, so that an edit made from a page read before another
/// operator's change is refused instead of undoing it.
public struct StoredApp: Sendable, Equatable {
    public var slug: String
    /// The app's object, as in the file's `apps` list.
    public var entry: String
    public var enabled: Bool
    public var version: Int
    /// The operator (subject) who made the last change, and when.
    public var changedBy: String
    public var changedAt: Date

    public init(slug: String, entry: String, enabled: Bool, version: Int = 1, changedBy: String, changedAt: Date = Date()) {
        self.slug = slug
        self.entry = entry
        self.enabled = enabled
        self.version = version
        self.changedBy = changedBy
        self.changedAt = changedAt
    }
}

/// The console's app catalog, beside the file's apps. Every write is conditional on the version the operator saw
/// (`nil`: the slug is new): a write that finds another version changes nothing and answers `nil`.
public protocol AppCatalogStore: Sendable {
    /// Every stored app, in the order they were added.
    func apps() async throws -> [StoredApp]
    func app(_ slug: String) async throws -> StoredApp?
    /// Stores `app` if the stored version is still `expectedVersion` (`nil`: none stored yet); the row as stored
    /// (its version one higher), or `nil` when another change came first.
    func save(_ app: StoredApp, expectedVersion: Int?) async throws -> StoredApp?
    /// Removes `slug` if its stored version is still `expectedVersion`; whether it did.
    func remove(_ slug: String, expectedVersion: Int) async throws -> Bool
}
