extension PostgresDatabase {
    /// Each migration is a list of statements (the extended protocol takes one statement per query). The tables
    /// are SQLite's, in PostgreSQL's types; the registration trigger does what SQLite's does.
    static let migrations: [[String]] = [
        [
            """
            CREATE TABLE sessions (
                id text PRIMARY KEY,
                sub text NOT NULL,
                body jsonb NOT NULL,
                last_seen_at timestamptz NOT NULL,
                expires_at timestamptz NOT NULL
            )
            """,
            "CREATE INDEX sessions_sub ON sessions (sub)",
            "CREATE TABLE login_attempts (state text PRIMARY KEY, body text NOT NULL, created_at timestamptz NOT NULL)",
            """
            CREATE TABLE registrations (
                sub text PRIMARY KEY,
                username text NOT NULL,
                registered_at timestamptz NOT NULL,
                phone_number text,
                display_name text,
                discoverability text NOT NULL DEFAULT 'nobody',
                pin_hash text,
                provisioned_at timestamptz,
                provision_attempts integer NOT NULL DEFAULT 0,
                provision_next_at timestamptz,
                provision_error text
            )
            """,
            // Usernames are ASCII (`Username`), so lower() is SQLite's NOCASE.
            "CREATE UNIQUE INDEX registrations_username ON registrations (lower(username))",
            "CREATE TABLE events (id bigserial PRIMARY KEY, name text NOT NULL, sub text, detail text, at timestamptz NOT NULL)",
            "CREATE INDEX events_at ON events (at)",
            """
            CREATE TABLE cookie_jars (
                session_id text PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
                body text NOT NULL,
                updated_at timestamptz NOT NULL
            )
            """,
            """
            CREATE TABLE app_handoffs (
                code_hash text PRIMARY KEY,
                session_id text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
                body text NOT NULL,
                expires_at timestamptz NOT NULL
            )
            """,
            """
            CREATE TABLE app_grants (
                token_hash text PRIMARY KEY,
                session_id text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
                slug text NOT NULL,
                created_at timestamptz NOT NULL
            )
            """,
            "CREATE INDEX app_grants_session ON app_grants (session_id)",
            "CREATE TABLE registration_flows (sub text PRIMARY KEY, body text NOT NULL, updated_at timestamptz NOT NULL)",
            """
            CREATE TABLE verification_sends (
                id bigserial PRIMARY KEY, sub text NOT NULL, phone_number text NOT NULL, at timestamptz NOT NULL
            )
            """,
            "CREATE INDEX verification_sends_sub ON verification_sends (sub, at)",
            "CREATE INDEX verification_sends_phone ON verification_sends (phone_number, at)",
            """
            CREATE TABLE code_attempts (
                code_id text PRIMARY KEY, sub text NOT NULL, attempts integer NOT NULL, created_at timestamptz NOT NULL
            )
            """,
            """
            CREATE FUNCTION registration_completes() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                UPDATE sessions SET body = jsonb_set(body, '{level}', '"registered"') WHERE sub = NEW.sub;
                DELETE FROM registration_flows WHERE sub = NEW.sub;
                RETURN NULL;
            END
            $$
            """,
            """
            CREATE TRIGGER registration_completes AFTER INSERT ON registrations
            FOR EACH ROW EXECUTE FUNCTION registration_completes()
            """,
        ],
        // Every change to a session or a jar, from any replica (and the registration trigger, and the cascade of a
        // deleted session), tells every replica's `StateInvalidationListener` at commit.
        [
            """
            CREATE FUNCTION session_changed() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                PERFORM pg_notify('\(StateInvalidationListener.channel)', 's' || OLD.id);
                RETURN NULL;
            END
            $$
            """,
            "CREATE TRIGGER session_changed AFTER UPDATE OR DELETE ON sessions FOR EACH ROW EXECUTE FUNCTION session_changed()",
            """
            CREATE FUNCTION jar_changed() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF TG_OP = 'DELETE' THEN
                    PERFORM pg_notify('\(StateInvalidationListener.channel)', 'j' || OLD.session_id);
                ELSE
                    PERFORM pg_notify('\(StateInvalidationListener.channel)', 'j' || NEW.session_id);
                END IF;
                RETURN NULL;
            END
            $$
            """,
            "CREATE TRIGGER jar_changed AFTER INSERT OR UPDATE OR DELETE ON cookie_jars FOR EACH ROW EXECUTE FUNCTION jar_changed()",
        ],
        // Back-channel logout: the provider's session of each session, and the logout tokens already honoured.
        [
            "ALTER TABLE sessions ADD COLUMN sid text",
            "CREATE INDEX sessions_sid ON sessions (sid)",
            """
            CREATE TABLE logout_tokens (
                issuer text NOT NULL, jti text NOT NULL, expires_at timestamptz NOT NULL, PRIMARY KEY (issuer, jti)
            )
            """,
        ],
        // Rate limits every replica counts against: unlogged, as a crash that forgets them loses nothing worth a WAL write.
        ["CREATE UNLOGGED TABLE rate_limits (key text PRIMARY KEY, used_until double precision NOT NULL)"],
        // The keys that sign identity assertions, one per generation, the same for every replica.
        ["CREATE TABLE assertion_keys (generation integer PRIMARY KEY, private_key text NOT NULL, signs_from timestamptz NOT NULL)"],
        // Sessions ended from another of their member's browsers, remembered until they would have expired.
        ["CREATE TABLE ended_sessions (id text PRIMARY KEY, until timestamptz NOT NULL)"],
        // The Matrix ID a chat backend made, and the usernames members hold while they finish the upgrade.
        [
            "ALTER TABLE registrations ADD COLUMN chat_user_id text",
            "CREATE TABLE username_claims (username_key text PRIMARY KEY, sub text NOT NULL, claimed_at timestamptz NOT NULL)",
            "CREATE INDEX username_claims_sub ON username_claims (sub)",
            """
            CREATE FUNCTION registration_releases_claims() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                DELETE FROM username_claims WHERE sub = NEW.sub;
                RETURN NULL;
            END
            $$
            """,
            """
            CREATE TRIGGER registration_releases_claims AFTER INSERT ON registrations
            FOR EACH ROW EXECUTE FUNCTION registration_releases_claims()
            """,
        ],
        // An operator's reset: the member's sessions go back to `sso` with the registration.
        [
            """
            CREATE FUNCTION registration_removed() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                UPDATE sessions SET body = jsonb_set(body, '{level}', '"sso"') WHERE sub = OLD.sub AND body->>'level' = 'registered';
                RETURN NULL;
            END
            $$
            """,
            """
            CREATE TRIGGER registration_removed AFTER DELETE ON registrations
            FOR EACH ROW EXECUTE FUNCTION registration_removed()
            """,
        ],
        // The sessions carry the member's chat account from the registration on, and lose it with the registration.
        [
            """
            CREATE OR REPLACE FUNCTION registration_completes() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                UPDATE sessions SET body = jsonb_set(jsonb_set(body, '{level}', '"registered"'), '{chatUserID}', COALESCE(to_jsonb(NEW.chat_user_id), 'null'))
                WHERE sub = NEW.sub;
                DELETE FROM registration_flows WHERE sub = NEW.sub;
                RETURN NULL;
            END
            $$
            """,
            """
            CREATE OR REPLACE FUNCTION registration_removed() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                UPDATE sessions SET body = jsonb_set(body, '{level}', '"sso"') - 'chatUserID' WHERE sub = OLD.sub AND body->>'level' = 'registered';
                RETURN NULL;
            END
            $$
            """,
        ],
        // Forms kept while their member signs in again (`KeptForm`).
        [
            """
            CREATE TABLE kept_forms (
                id_hash text PRIMARY KEY, sub text NOT NULL, body text NOT NULL, created_at timestamptz NOT NULL,
                expires_at timestamptz NOT NULL)
            """,
            "CREATE INDEX kept_forms_sub ON kept_forms(sub)",
            "ALTER TABLE ended_sessions ADD COLUMN timed_out_sub text",
        ],
        // The audit trail (`AuditRecord`), read by member, app and day, newest first.
        [
            """
            CREATE TABLE audit (
                id bigserial PRIMARY KEY, at timestamptz NOT NULL, action text NOT NULL, member text, app text, path text, reason text,
                detail text)
            """,
            "CREATE INDEX audit_at ON audit(at)",
            "CREATE INDEX audit_member ON audit(member, id)",
            "CREATE INDEX audit_app ON audit(app, id)",
        ],
        // The console's app catalog (`StoredApp`); every change tells every replica's `StateInvalidationListener`.
        [
            """
            CREATE TABLE apps (
                slug text PRIMARY KEY, entry text NOT NULL, enabled boolean NOT NULL, version integer NOT NULL, changed_by text NOT NULL,
                changed_at timestamptz NOT NULL, created_at timestamptz NOT NULL)
            """,
            """
            CREATE FUNCTION apps_changed() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                PERFORM pg_notify('\(StateInvalidationListener.channel)', 'c');
                RETURN NULL;
            END
            $$
            """,
            "CREATE TRIGGER apps_changed AFTER INSERT OR UPDATE OR DELETE ON apps FOR EACH STATEMENT EXECUTE FUNCTION apps_changed()",
        ],
        // What is remembered of a member between sessions (`MemberStore`).
        [
            "CREATE TABLE members (account text PRIMARY KEY, name text, recent_apps text NOT NULL DEFAULT '', seen_at timestamptz NOT NULL)",
            "CREATE INDEX members_seen_at ON members(seen_at)",
        ],
        // The Matrix devices held for sessions (`MatrixDeviceStore`).
        [
            """
            CREATE TABLE matrix_devices (
                session_id text PRIMARY KEY, sub text NOT NULL, user_id text NOT NULL, device_id text NOT NULL, access_token text NOT NULL,
                created_at timestamptz NOT NULL)
            """
        ],
        // A browser's push subscription, kept with its session's device (`StoredPush`).
        [
            "ALTER TABLE matrix_devices ADD COLUMN push_key text, ADD COLUMN push text",
            "CREATE UNIQUE INDEX matrix_devices_push_key ON matrix_devices(push_key)",
        ],
    ]
}
