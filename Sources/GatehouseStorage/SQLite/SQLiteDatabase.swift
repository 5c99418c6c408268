import Foundation
import Logging
import NIOConcurrencyHelpers
import SQLiteNIO

/// One SQLite file, opened once and migrated before the server accepts requests.
///
/// SQLite serialises access to a connection (sqlite-nio opens it with `SQLITE_OPEN_FULLMUTEX`), so every store shares
/// this one connection and keeps each change to a single statement.
///
/// A file that stops taking writes (made read-only, moved or replaced, its disk full, an I/O error, locked by another
/// process past the busy timeout) is `StorageError.unavailable`: the member's "temporarily unavailable" page, counted
/// as such, and `/readyz` says so (it writes). The connection is then opened again, two seconds after the failure
/// and every two seconds after that until the file answers: a file put back, made writable or given room recovers
/// without a restart.
public final class SQLiteDatabase: Sendable {
    private let storage: SQLiteConnection.Storage
    private let logger: Logger
    private let state: NIOLockedValueBox<State>
    let statistics = DatabaseStatistics(maximumConnections: 1)

    struct State {
        var connection: SQLiteConnection
        var isClosed = false
        /// When the file failed as unavailable (and was not opened again since): a query after `reopenInterval`
        /// opens it again.
        var failedAt: ContinuousClock.Instant?
        var reopening = false
    }

    static let reopenInterval = Duration.seconds(2)

    private init(connection: SQLiteConnection, storage: SQLiteConnection.Storage, logger: Logger) {
        self.storage = storage
        self.logger = logger
        state = NIOLockedValueBox(State(connection: connection))
    }

    /// A database dropped without `close()` (start-up failed half-way) still closes its file.
    deinit {
        state.withLockedValue { state in if !state.isClosed { _ = state.connection.close() } }
    }

    /// Opens (creating folders as needed) and migrates the database at `path`; `":memory:"` for a private one.
    public static func open(path: String, logger: Logger) async throws -> SQLiteDatabase {
        let storage: SQLiteConnection.Storage
        if path == ":memory:" {
            storage = .memory
        } else {
            // Owner-only: the file holds every member's sessions (their secrets sealed, the rest not). SQLite gives its
            // `-wal` and `-shm` files the database file's mode.
            do {
                try OwnerOnlyFiles.createFolder(of: path)
                if !FileManager.default.fileExists(atPath: path) { try OwnerOnlyFiles.create(path, contents: "") }
                for file in [path, path + "-wal", path + "-shm", path + "-journal"] { try OwnerOnlyFiles.restrict(file) }
            } catch {
                throw StorageError.unavailable("cannot make the SQLite database at \(path) owner-only: \(error)")
            }
            storage = .file(path: path)
        }
        do {
            let connection = try await Self.connect(storage, logger: logger)
            let database = SQLiteDatabase(connection: connection, storage: storage, logger: logger)
            try await database.migrate()
            return database
        } catch StorageError.newerSchema(let mismatch) {
            throw StorageError.newerSchema(mismatch)
        } catch {
            throw StorageError.unavailable("cannot open SQLite database at \(path): \(error)")
        }
    }

    /// Runs `body` on the existing database at `path` as it is, not migrated (backups, restores), and closes it: a file
    /// that is not there is an error.
    static func withExisting<T: Sendable>(path: String, logger: Logger, _ body: (SQLiteDatabase) async throws -> T) async throws -> T {
        guard FileManager.default.fileExists(atPath: path) else { throw StorageError.unavailable("no SQLite database at \(path)") }
        let database: SQLiteDatabase
        do {
            database = SQLiteDatabase(connection: try await Self.connect(.file(path: path), logger: logger), storage: .file(path: path), logger: logger)
        } catch {
            throw StorageError.unavailable("cannot open SQLite database at \(path): \(error)")
        }
        do {
            let result = try await body(database)
            try await database.close()
            return result
        } catch {
            try? await database.close()
            throw error
        }
    }

    /// A connection with this gateway's settings (each connection's own; `journal_mode` is the file's).
    private static func connect(_ storage: SQLiteConnection.Storage, logger: Logger) async throws -> SQLiteConnection {
        let connection = try await SQLiteConnection.open(storage: storage, logger: logger)
        do {
            _ = try await connection.query("PRAGMA journal_mode = WAL")
            // With WAL, NORMAL syncs at checkpoints instead of at every commit: a power cut may lose the last
            // moments of events and last-seen times, never the database's consistency.
            _ = try await connection.query("PRAGMA synchronous = NORMAL")
            _ = try await connection.query("PRAGMA busy_timeout = 5000")
            // A member's cookie jar goes with their session, whichever way the session ends.
            _ = try await connection.query("PRAGMA foreign_keys = ON")
        } catch {
            try? await connection.close().get()
            throw error
        }
        return connection
    }

    public func close() async throws {
        guard
            let connection = state.withLockedValue({ state -> SQLiteConnection? in
                defer { state.isClosed = true }
                return state.isClosed ? nil : state.connection
            })
        else { return }
        // The future-based close, because the async one gives up in a cancelled task and leaves the file open.
        try await connection.close().get()
    }

    /// Whether the database takes a write now (readiness): a file that only reads cannot sign anybody in.
    func answers() async -> Bool {
        (try? await query(
            "INSERT INTO readiness (id, checked_at) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET checked_at = excluded.checked_at",
            [.float(Date().timeIntervalSince1970)])) != nil
    }

    @discardableResult
    func query(_ sql: String, _ binds: [SQLiteData] = []) async throws -> [SQLiteRow] {
        try await statistics.counting {
            let connection = try await connectionForQuery()
            do {
                return try await connection.query(sql, binds)
            } catch {
                let failure = Self.storageError(error)
                if failure.isUnavailable { state.withLockedValue { $0.failedAt = $0.failedAt ?? .now } }
                throw failure
            }
        }
    }

    /// The connection to ask: a fresh one first when the file failed as unavailable `reopenInterval` ago.
    private func connectionForQuery() async throws -> SQLiteConnection {
        let (current, reopen) = state.withLockedValue { state -> (SQLiteConnection, Bool) in
            let due = state.failedAt.map { ContinuousClock.now - $0 >= Self.reopenInterval } ?? false
            let reopen = due && !state.reopening && !state.isClosed
            if reopen { state.reopening = true }
            return (state.connection, reopen)
        }
        guard reopen else { return current }
        do {
            let fresh = try await Self.connect(storage, logger: logger)
            let old = state.withLockedValue { state -> SQLiteConnection in
                defer { (state.connection, state.failedAt, state.reopening) = (fresh, nil, false) }
                return state.connection
            }
            logger.notice("SQLite database opened again after it stopped answering")
            try? await old.close().get()
            return fresh
        } catch {
            state.withLockedValue { state in (state.failedAt, state.reopening) = (.now, false) }
            throw StorageError.unavailable("SQLite database cannot be opened again: \(error)")
        }
    }

    /// The store's reading of an SQLite failure: the file not taking writes (read-only, moved, full, an I/O error,
    /// locked past the busy timeout, not openable) is `unavailable`; anything else the statement's own failure.
    static func storageError(_ error: any Error) -> StorageError {
        if let error = error as? StorageError { return error }
        if let error = error as? SQLiteError {
            let reason = "\(error.reason)"
            let unavailable = ["readOnly", "readonly", "full", "ioError", "busy", "locked", "cantOpen", "permission", "notADatabase"]
            if unavailable.contains(where: { reason.hasPrefix($0) }) { return .unavailable("SQLite \(error)") }
        }
        return .query(String(describing: error))
    }

    /// The schema version this Gatehouse migrates to.
    public static var schemaVersion: Int { migrations.count }

    /// The schema version the database was migrated to (0: none).
    func schemaVersion() async throws -> Int {
        try await query("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at REAL NOT NULL)")
        return try await query("SELECT COALESCE(MAX(version), 0) AS version FROM schema_migrations").first?.column("version")?.integer ?? 0
    }

    /// Where an upgrade keeps the store as it was before migrating it from `version`.
    public static func copyBeforeUpgrade(of path: String, from version: Int) -> String { "\(path).schema-\(version).backup" }

    /// Migrates to `schemaVersion`; a store a newer Gatehouse migrated further is refused. A store with data is first
    /// copied (`copyBeforeUpgrade`), so that a rollback has the store as this upgrade found it even when nobody took a
    /// backup.
    private func migrate() async throws {
        let current = try await schemaVersion()
        let path: String? = if case .file(let path) = storage { path } else { nil }
        guard current <= Self.schemaVersion else {
            let kept = path.map { Self.copyBeforeUpgrade(of: $0, from: Self.schemaVersion) }.flatMap { FileManager.default.fileExists(atPath: $0) ? $0 : nil }
            throw StorageError.newerSchema(
                SchemaMismatch(
                    store: current, known: Self.schemaVersion,
                    wayBack: "stop it, move the store aside and run `gatehouse storage restore --from FILE` with the backup taken before the upgrade"
                        + (kept.map { " (the upgrade kept the store as it found it: \($0))" } ?? "")))
        }
        if let path, current > 0, current < Self.schemaVersion {
            let copy = Self.copyBeforeUpgrade(of: path, from: current)
            if !FileManager.default.fileExists(atPath: copy) {
                try await vacuum(into: copy)
                logger.notice("store copied before its upgrade", metadata: ["from": "\(current)", "to": "\(Self.schemaVersion)", "copy": .string(copy)])
            }
        }
        for (index, migration) in Self.migrations.enumerated() where index + 1 > current {
            try await query("BEGIN")
            do {
                for statement in Self.statements(migration) {
                    try await query(statement)
                }
                try await query(
                    "INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)", [.integer(index + 1), .float(Date().timeIntervalSince1970)])
                try await query("COMMIT")
            } catch {
                _ = try? await query("ROLLBACK")
                throw error
            }
        }
    }
}

extension SQLiteDatabase {
    /// A consistent copy of the database, owner-only, at `file`, which must not exist: SQLite's `VACUUM INTO` reads one
    /// transaction's view, so a gateway writing meanwhile neither tears the copy nor waits for it.
    func vacuum(into file: String) async throws {
        guard !FileManager.default.fileExists(atPath: file) else { throw StorageError.query("\(file) exists already: nothing is overwritten") }
        do {
            try OwnerOnlyFiles.createFolder(of: file)
            try OwnerOnlyFiles.create(file, contents: "")
        } catch {
            throw StorageError.unavailable("cannot create \(file): \(error)")
        }
        do {
            try await query("VACUUM INTO ?", [.text(file)])
        } catch {
            try? FileManager.default.removeItem(atPath: file)
            throw error
        }
    }
}

extension SQLiteDatabase: SealedRowAccess {
    func values(of column: SealedColumn) async throws -> [(key: String, value: String)] {
        try await query("SELECT CAST(\(column.key) AS TEXT) AS key, \(column.column) AS value FROM \(column.table) WHERE \(column.column) IS NOT NULL")
            .compactMap { row in
                guard let key = row.column("key")?.string, let value = row.column("value")?.string else { return nil }
                return (key, value)
            }
    }

    func replace(_ column: SealedColumn, key: String, old: String, new: String) async throws {
        try await query(
            "UPDATE \(column.table) SET \(column.column) = ? WHERE CAST(\(column.key) AS TEXT) = ? AND \(column.column) = ?",
            [.text(new), .text(key), .text(old)])
    }
}
