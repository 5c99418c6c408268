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
    /// The keys that seal the store's secrets (`storage.encryption_key_file`, `GATEHOUSE_STORAGE_ENCRYPTION_KEY`).
    public var keys: StorageKeySource

    /// Where state is kept unless `directories.data` says otherwise.
    public static let defaultDataFolder = "data"

    /// The SQLite file in the data folder, unless `storage.sqlite_path` says otherwise.
    public static func sqlitePath(in data: String) -> String { data + "/gatehouse.sqlite" }

    /// The key file development mode makes and keeps in the data folder.
    public static func developmentKeyPath(in data: String) -> String { data + "/storage.key" }

    public init(
        kind: Kind = .sqlite, sqlitePath: String = sqlitePath(in: defaultDataFolder), postgresURL: String? = nil, keys: StorageKeySource = .missing
    ) {
        self.kind = kind
        self.sqlitePath = sqlitePath
        self.postgresURL = postgresURL
        self.keys = keys
    }
}

/// Where the store's keys come from.
public enum StorageKeySource: Sendable {
    case keyring(StorageKeyring)
    /// Development mode's own key file, made (owner-only) the first time.
    case developmentFile(String)
    /// No key: the store does not open.
    case missing

    /// The keys, reading (or first making) development mode's key file.
    public func keyring() throws -> StorageKeyring {
        switch self {
        case .keyring(let keyring):
            return keyring
        case .missing:
            throw StorageError.unavailable(
                "no storage encryption key: set storage.encryption_key_file or GATEHOUSE_STORAGE_ENCRYPTION_KEY (`openssl rand -base64 32`)")
        case .developmentFile(let path):
            if !FileManager.default.fileExists(atPath: path) {
                try OwnerOnlyFiles.createFolder(of: path)
                try OwnerOnlyFiles.create(path, contents: StorageKeyring.newKeyText())
            }
            do {
                return try StorageKeyring.parse(String(contentsOfFile: path, encoding: .utf8))
            } catch {
                throw StorageError.unavailable("the development storage key \(path) cannot be used: \(error)")
            }
        }
    }
}

