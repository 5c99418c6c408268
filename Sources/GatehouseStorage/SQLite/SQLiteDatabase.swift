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
        } catch {
            throw StorageError.unavailable("cannot open SQLite database at \(path): \(error)")
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

    /// Migrations in order; each runs once, recorded in `schema_migrations`.
    static let migrations: [String] = [
        """
        CREATE TABLE sessions (
            id TEXT PRIMARY KEY,
            sub TEXT NOT NULL,
            body TEXT NOT NULL,
            last_seen_at REAL NOT NULL,
            expires_at REAL NOT NULL
        );
        CREATE INDEX sessions_sub ON sessions(sub);
        CREATE TABLE login_attempts (
            state TEXT PRIMARY KEY,
            body TEXT NOT NULL,
            created_at REAL NOT NULL
        );
        CREATE TABLE registrations (
            sub TEXT PRIMARY KEY,
            username TEXT NOT NULL,
            registered_at REAL NOT NULL
        );
        CREATE TABLE events (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            name TEXT NOT NULL,
            sub TEXT,
            detail TEXT,
            at REAL NOT NULL
        );
        CREATE INDEX events_at ON events(at);
        """,
        """
        CREATE TABLE cookie_jars (
            session_id TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
            body TEXT NOT NULL,
            updated_at REAL NOT NULL
        );
        """,
        """
        CREATE TABLE app_handoffs (
            code_hash TEXT PRIMARY KEY,
            session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            body TEXT NOT NULL,
            expires_at REAL NOT NULL
        );
        CREATE TABLE app_grants (
            token_hash TEXT PRIMARY KEY,
            session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            slug TEXT NOT NULL,
            created_at REAL NOT NULL
        );
        CREATE INDEX app_grants_session ON app_grants(session_id);
        """,
        """
        ALTER TABLE registrations ADD COLUMN phone_number TEXT;
        ALTER TABLE registrations ADD COLUMN display_name TEXT;
        ALTER TABLE registrations ADD COLUMN discoverability TEXT NOT NULL DEFAULT 'nobody';
        ALTER TABLE registrations ADD COLUMN pin_hash TEXT;
        ALTER TABLE registrations ADD COLUMN provisioned_at REAL;
        ALTER TABLE registrations ADD COLUMN provision_attempts INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE registrations ADD COLUMN provision_next_at REAL;
        ALTER TABLE registrations ADD COLUMN provision_error TEXT;
        CREATE UNIQUE INDEX registrations_username ON registrations(username COLLATE NOCASE);
        CREATE TABLE registration_flows (
            sub TEXT PRIMARY KEY,
            body TEXT NOT NULL,
            updated_at REAL NOT NULL
        );
        CREATE TABLE verification_sends (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            sub TEXT NOT NULL,
            phone_number TEXT NOT NULL,
            at REAL NOT NULL
        );
        CREATE INDEX verification_sends_sub ON verification_sends(sub, at);
        CREATE INDEX verification_sends_phone ON verification_sends(phone_number, at);
        CREATE TRIGGER registration_completes AFTER INSERT ON registrations BEGIN
            UPDATE sessions SET body = json_set(body, '$.level', 'registered') WHERE sub = NEW.sub;
            DELETE FROM registration_flows WHERE sub = NEW.sub;
        END;
        """,
        """
        CREATE TABLE code_attempts (
            code_id TEXT PRIMARY KEY,
            sub TEXT NOT NULL,
            attempts INTEGER NOT NULL,
            created_at REAL NOT NULL
        );
        """,
        """
        ALTER TABLE sessions ADD COLUMN sid TEXT;
        CREATE INDEX sessions_sid ON sessions(sid);
        CREATE TABLE logout_tokens (
            issuer TEXT NOT NULL,
            jti TEXT NOT NULL,
            expires_at REAL NOT NULL,
            PRIMARY KEY (issuer, jti)
        );
        """,
        """
        CREATE TABLE assertion_keys (
            generation INTEGER PRIMARY KEY,
            private_key TEXT NOT NULL,
            signs_from REAL NOT NULL
        );
        """,
        """
        CREATE TABLE ended_sessions (
            id TEXT PRIMARY KEY,
            until REAL NOT NULL
        );
        """,
        """
        CREATE TABLE readiness (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            checked_at REAL NOT NULL
        );
        """,
        """
        ALTER TABLE registrations ADD COLUMN chat_user_id TEXT;
        CREATE TABLE username_claims (
            username TEXT PRIMARY KEY COLLATE NOCASE,
            sub TEXT NOT NULL,
            claimed_at REAL NOT NULL
        );
        CREATE INDEX username_claims_sub ON username_claims(sub);
        CREATE TRIGGER registration_releases_claims AFTER INSERT ON registrations BEGIN
            DELETE FROM username_claims WHERE sub = NEW.sub;
        END;
        """,
        """
        CREATE TRIGGER registration_removed AFTER DELETE ON registrations BEGIN
            UPDATE sessions SET body = json_set(body, '$.level', 'sso') WHERE sub = OLD.sub AND json_extract(body, '$.level') = 'registered';
        END;
        """,
        // The sessions carry the member's chat account from the registration on, and lose it with the registration.
        """
        DROP TRIGGER registration_completes;
        CREATE TRIGGER registration_completes AFTER INSERT ON registrations BEGIN
            UPDATE sessions SET body = json_set(body, '$.level', 'registered', '$.chatUserID', NEW.chat_user_id) WHERE sub = NEW.sub;
            DELETE FROM registration_flows WHERE sub = NEW.sub;
        END;
        DROP TRIGGER registration_removed;
        CREATE TRIGGER registration_removed AFTER DELETE ON registrations BEGIN
            UPDATE sessions SET body = json_remove(json_set(body, '$.level', 'sso'), '$.chatUserID')
            WHERE sub = OLD.sub AND json_extract(body, '$.level') = 'registered';
        END;
        """,
        // Forms kept while their member signs in again (`KeptForm`).
        """
        CREATE TABLE kept_forms (
            id_hash TEXT PRIMARY KEY, sub TEXT NOT NULL, body TEXT NOT NULL, created_at REAL NOT NULL, expires_at REAL NOT NULL
        );
        CREATE INDEX kept_forms_sub ON kept_forms(sub);
        ALTER TABLE ended_sessions ADD COLUMN timed_out_sub TEXT;
        """,
        // The audit trail (`AuditRecord`), read by member, app and day, newest first.
        """
        CREATE TABLE audit (
            id INTEGER PRIMARY KEY AUTOINCREMENT, at REAL NOT NULL, action TEXT NOT NULL, member TEXT, app TEXT, path TEXT, reason TEXT,
            detail TEXT
        );
        CREATE INDEX audit_at ON audit(at);
        CREATE INDEX audit_member ON audit(member, id);
        CREATE INDEX audit_app ON audit(app, id);
        """,
        // The console's app catalog (`StoredApp`).
        """
        CREATE TABLE apps (
            slug TEXT PRIMARY KEY, entry TEXT NOT NULL, enabled INTEGER NOT NULL, version INTEGER NOT NULL, changed_by TEXT NOT NULL,
            changed_at REAL NOT NULL, created_at REAL NOT NULL
        );
        """,
        // What is remembered of a member between sessions (`MemberStore`).
        """
        CREATE TABLE members (account TEXT PRIMARY KEY, name TEXT, recent_apps TEXT NOT NULL DEFAULT '', seen_at REAL NOT NULL);
        CREATE INDEX members_seen_at ON members(seen_at);
        """,
        // The Matrix devices held for sessions (`MatrixDeviceStore`): no cascade from `sessions`, so that a device
        // whose session ended is found and logged out.
        """
        CREATE TABLE matrix_devices (
            session_id TEXT PRIMARY KEY, sub TEXT NOT NULL, user_id TEXT NOT NULL, device_id TEXT NOT NULL, access_token TEXT NOT NULL,
            created_at REAL NOT NULL
        );
        """,
    ]

    /// The statements of one migration: split at `;`, except inside a trigger's `BEGIN … END`.
    static func statements(_ migration: String) -> [String] {
        var statements: [String] = []
        var pending = ""
        for piece in migration.split(separator: ";", omittingEmptySubsequences: false) {
            pending += pending.isEmpty ? String(piece) : ";" + piece
            let trimmed = pending.trimmingCharacters(in: .whitespacesAndNewlines)
            let insideTrigger = trimmed.uppercased().hasPrefix("CREATE TRIGGER") && !trimmed.uppercased().hasSuffix("END")
            if !insideTrigger {
                if !trimmed.isEmpty { statements.append(trimmed) }
                pending = ""
            }
        }
        return statements
    }

    private func migrate() async throws {
        try await query("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at REAL NOT NULL)")
        let applied = try await query("SELECT COALESCE(MAX(version), 0) AS version FROM schema_migrations")
        let current = applied.first?.column("version")?.integer ?? 0
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
