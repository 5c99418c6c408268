import Foundation

extension SQLiteDatabase {
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
        // A browser's push subscription, kept with its session's device (`StoredPush`).
        """
        ALTER TABLE matrix_devices ADD COLUMN push_key TEXT;
        ALTER TABLE matrix_devices ADD COLUMN push TEXT;
        CREATE UNIQUE INDEX matrix_devices_push_key ON matrix_devices(push_key);
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
}
