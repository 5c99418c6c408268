/// Failures of any storage backend.
public enum StorageError: Error, CustomStringConvertible {
    case unavailable(String)
    case query(String)
    case corrupt(String)

    public var reason: String {
        switch self {
        case .unavailable: "storage_unavailable"
        case .query: "storage_query_failed"
        case .corrupt: "storage_corrupt_row"
        }
    }

    public var description: String {
        switch self {
        case .unavailable(let detail), .query(let detail), .corrupt(let detail): "\(reason): \(detail)"
        }
    }
}
