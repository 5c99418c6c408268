import Foundation

/// Which store the gateway keeps its state in (configuration key `storage`).
public struct StorageConfiguration: Sendable {
    public enum Kind: String, Sendable, CaseIterable {
        case sqlite
        case postgres
    }

    public var kind: Kind
    public var sqlitePath: String
    /// Only from the environment or a `_FILE` (it usually holds a password).
    public var postgresURL: String?

    /// Where state is kept unless `directories.data` says otherwise.
    public static let defaultDataFolder = "data"

    /// The SQLite file in the data folder, unless `storage.sqlite_path` says otherwise.
    public static func sqlitePath(in data: String) -> String { data + "/gatehouse.sqlite" }

    public init(kind: Kind = .sqlite, sqlitePath: String = sqlitePath(in: defaultDataFolder), postgresURL: String? = nil) {
        self.kind = kind
        self.sqlitePath = sqlitePath
        self.postgresURL = postgresURL
    }
}
