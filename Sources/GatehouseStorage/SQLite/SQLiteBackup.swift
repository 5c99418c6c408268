import Foundation
import Logging

/// What a store holds, as `gatehouse storage backup` and `restore` print it: the schema version, each table's rows,
/// and which keys sealed its secrets.
public struct StoreInventory: Sendable, CustomStringConvertible {
    public var schemaVersion: Int
    public var rows: [(table: String, count: Int)]
    /// Sealed values by the id of the key that sealed them.
    public var sealedBy: [String: Int]
    /// Sealed values that none of the keys at hand opens.
    public var unreadable: Int
    /// The ids of the keys at hand (the sealing key first).
    public var keysAtHand: [String]

    public var description: String {
        var lines = ["schema version \(schemaVersion)"]
        lines += rows.map { "  \($0.table): \($0.count) row(s)" }
        let sealed = sealedBy.sorted { $0.key < $1.key }.map { "\($0.value) by key \($0.key)" + (keysAtHand.contains($0.key) ? "" : " (not at hand)") }
        lines.append("sealed values: " + (sealed.isEmpty ? "none" : sealed.joined(separator: ", ")))
        lines.append("keys at hand: \(keysAtHand.joined(separator: ", ")); values they do not open: \(unreadable)")
        return lines.joined(separator: "\n")
    }
}

/// Backups of the SQLite store and restores from them. A backup is itself an SQLite database (`VACUUM INTO`, never a
/// file copy, which a writing gateway can tear); its secrets stay sealed, so it is only as useful as the key kept
/// beside it (and as safe as the key kept apart from it).
public enum SQLiteBackup {
    /// Copies the store at `store` (a gateway may be serving from it) to `file`, which must not exist, and says what
    /// the copy holds.
    public static func backup(store: String, to file: String, keyring: StorageKeyring, logger: Logger) async throws -> StoreInventory {
        guard !FileManager.default.fileExists(atPath: file) else { throw BackupRefusal("\(file) exists already: a backup never overwrites a file") }
        try await SQLiteDatabase.withExisting(path: store, logger: logger) { try await $0.vacuum(into: file) }
        return try await inventory(of: file, keyring: keyring, logger: logger)
    }

    /// Puts the backup `file` at `store`, where no store may be yet, once it is known to be whole, of a schema this
    /// Gatehouse knows, and opened by the keys at hand. The gateway's next start migrates it if it is older.
    public static func restore(from file: String, to store: String, keyring: StorageKeyring, logger: Logger) async throws -> StoreInventory {
        guard !["", "-wal", "-shm", "-journal"].contains(where: { FileManager.default.fileExists(atPath: store + $0) }) else {
            throw BackupRefusal("a store is already at \(store): restoring never overwrites one; stop the gateway and move it (and its -wal and -shm files) aside")
        }
        return try await SQLiteDatabase.withExisting(path: file, logger: logger) { backup in try await restore(backup, from: file, to: store, keyring: keyring) }
    }

    private static func restore(_ backup: SQLiteDatabase, from file: String, to store: String, keyring: StorageKeyring) async throws -> StoreInventory {
        let check = try await backup.query("PRAGMA integrity_check").first?.column("integrity_check")?.string
        guard check == "ok" else { throw BackupRefusal("\(file) is not a whole SQLite database: \(check ?? "no answer")") }
        let held = try await inventory(of: backup, keyring: keyring)
        guard held.schemaVersion > 0 else { throw BackupRefusal("\(file) is not a Gatehouse store (no schema version)") }
        guard held.schemaVersion <= SQLiteDatabase.schemaVersion else {
            throw BackupRefusal(
                "\(file) is at schema version \(held.schemaVersion); this Gatehouse knows versions up to \(SQLiteDatabase.schemaVersion): restore it with the Gatehouse that made it")
        }
        guard held.unreadable == 0 else {
            let missing = held.sealedBy.keys.filter { !held.keysAtHand.contains($0) }.sorted()
            throw BackupRefusal(
                "\(held.unreadable) sealed value(s) in \(file) do not open with the keys at hand (\(held.keysAtHand.joined(separator: ", ")))"
                    + (missing.isEmpty ? "" : "; they were sealed by key(s) \(missing.joined(separator: ", "))")
                    + ": put the key the backup was made with into storage.encryption_key_file")
        }
        try await backup.vacuum(into: store)
        return held
    }

    /// What the SQLite database at `file` holds.
    public static func inventory(of file: String, keyring: StorageKeyring, logger: Logger) async throws -> StoreInventory {
        try await SQLiteDatabase.withExisting(path: file, logger: logger) { try await inventory(of: $0, keyring: keyring) }
    }

    static func inventory(of database: SQLiteDatabase, keyring: StorageKeyring) async throws -> StoreInventory {
        let tables = try await database.query("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
            .compactMap { $0.column("name")?.string }
        var rows: [(table: String, count: Int)] = []
        for table in tables {
            rows.append((table, try await database.query("SELECT COUNT(*) AS count FROM \"\(table)\"").first?.column("count")?.integer ?? 0))
        }
        let seals = try await SealedInventory.count(database, columns: SealedColumn.all.filter { tables.contains($0.table) }, keyring: keyring)
        return StoreInventory(
            schemaVersion: try await database.schemaVersion(), rows: rows, sealedBy: seals.sealedBy, unreadable: seals.unreadable,
            keysAtHand: keyring.keys.map(\.id))
    }
}

/// A backup or a restore refused before it touched anything, and why.
public struct BackupRefusal: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
