/// Failures of any storage backend. An unreachable store is the member's "temporarily unavailable" page (`503`);
/// anything else is an internal error.
public enum StorageError: Error, CustomStringConvertible {
    case unavailable(String)
    case query(String)
    case corrupt(String)
    /// A unique index refused a row (the index's name).
    case uniqueViolation(String)
    /// The store was migrated by a newer Gatehouse: this one does not start on it.
    case newerSchema(SchemaMismatch)

    public var reason: String {
        switch self {
        case .unavailable: "storage_unavailable"
        case .query: "storage_query_failed"
        case .corrupt: "storage_corrupt_row"
        case .uniqueViolation: "storage_unique_violation"
        case .newerSchema: "storage_schema_newer"
        }
    }

    public var isUnavailable: Bool {
        if case .unavailable = self { return true }
        return false
    }

    public var description: String {
        switch self {
        case .unavailable(let detail), .query(let detail), .corrupt(let detail), .uniqueViolation(let detail): "\(reason): \(detail)"
        case .newerSchema(let mismatch): "\(reason): \(mismatch)"
        }
    }
}

/// A store whose schema is newer than the running Gatehouse knows: both versions and the way back.
public struct SchemaMismatch: Sendable, Equatable, CustomStringConvertible {
    /// The schema version the store was migrated to.
    public let store: Int
    /// The newest schema version this Gatehouse knows.
    public let known: Int
    /// How to roll back on this backend.
    let wayBack: String

    public var description: String {
        """
        the store is at schema version \(store), migrated by a newer Gatehouse; this Gatehouse knows schema versions up to \(known) \
        and does not start on it. Start the newer Gatehouse again, or roll back: \(wayBack) (docs/operations.md, "Upgrade and rollback")
        """
    }
}
