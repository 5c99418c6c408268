/// Failures of any storage backend. An unreachable store is the member's "temporarily unavailable" page (`503`);
/// anything else is an internal error.
public enum StorageError: Error, CustomStringConvertible {
    case unavailable(String)
    case query(String)
    case corrupt(String)
    /// A unique index refused a row (the index's name).
    case uniqueViolation(String)

    public var reason: String {
        switch self {
        case .unavailable: "storage_unavailable"
        case .query: "storage_query_failed"
        case .corrupt: "storage_corrupt_row"
        case .uniqueViolation: "storage_unique_violation"
        }
    }

    public var isUnavailable: Bool {
        if case .unavailable = self { return true }
        return false
    }

    public var description: String {
        switch self {
        case .unavailable(let detail), .query(let detail), .corrupt(let detail), .uniqueViolation(let detail): "\(reason): \(detail)"
        }
    }
}
