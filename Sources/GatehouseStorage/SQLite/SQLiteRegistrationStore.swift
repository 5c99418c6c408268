import Foundation
import GatehouseCore
import SQLiteNIO

public struct SQLiteRegistrationStore: RegistrationStore {
    let database: SQLiteDatabase
    let keyring: StorageKeyring

    public init(database: SQLiteDatabase, keyring: StorageKeyring) {
        self.database = database
        self.keyring = keyring
    }

    public func account(sub: String) async throws -> RegisteredAccount? {
        guard
            let row = try await database.query(
                "SELECT username, phone_number, chat_user_id, display_name, discoverability, pin_hash FROM registrations WHERE sub = ?",
                [.text(sub)]
            ).first,
            let username = row.column("username")?.string
        else { return nil }
        let phoneNumber = try row.column("phone_number")?.string.map { try SealedColumn.phoneNumbers.open($0, key: sub, with: keyring) }
        let displayName = try row.column("display_name")?.string.map { try SealedColumn.displayNames.open($0, key: sub, with: keyring) }
        // Accounts found on the homeserver have no profile of the flow's: no discoverability either.
        let fromFlow = row.column("pin_hash")?.string != nil
        return RegisteredAccount(
            username: username, phoneNumber: phoneNumber.flatMap(PhoneNumber.stored), chatUserID: row.column("chat_user_id")?.string,
            displayName: displayName, discoverability: fromFlow ? row.column("discoverability")?.string.flatMap(Discoverability.init(rawValue:)) : nil)
    }

    public func pinHash(sub: String) async throws -> String? {
        try await database.query("SELECT pin_hash FROM registrations WHERE sub = ?", [.text(sub)]).first?.column("pin_hash")?.string
    }

    public func updateAccount(sub: String, displayName: String?, discoverability: Discoverability?, phoneNumber: PhoneNumber?) async throws {
        try await database.query(
            """
            UPDATE registrations SET display_name = COALESCE(?, display_name), discoverability = COALESCE(?, discoverability),
                phone_number = COALESCE(?, phone_number)
            WHERE sub = ?
            """,
            [
                try displayName.map { .text(try SealedColumn.displayNames.seal($0, key: sub, with: keyring)) } ?? .null,
                discoverability.map { .text($0.rawValue) } ?? .null,
                try phoneNumber.map { .text(try SealedColumn.phoneNumbers.seal($0.e164, key: sub, with: keyring)) } ?? .null, .text(sub),
            ])
    }

    public func isUsernameTaken(_ username: String, for sub: String, claimsSince: Date) async throws -> Bool {
        try await !database.query(
            """
            SELECT 1 FROM registrations WHERE username = ?1 COLLATE NOCASE
            UNION ALL SELECT 1 FROM username_claims WHERE username = ?1 COLLATE NOCASE AND sub <> ?2 AND claimed_at >= ?3
            """, [.text(username), .text(sub), .time(claimsSince)]
        ).isEmpty
    }

    /// The upsert takes the row when it is the member's own claim or a stale one; the `WHERE` of the insert keeps
    /// registered names out. SQLite runs the statement alone on the shared connection.
    public func claimUsername(_ username: String, for sub: String, at date: Date, claimsSince: Date) async throws -> Bool {
        let claimed = try await database.query(
            """
            INSERT INTO username_claims (username, sub, claimed_at)
            SELECT ?1, ?2, ?3 WHERE NOT EXISTS (SELECT 1 FROM registrations WHERE username = ?1 COLLATE NOCASE)
            ON CONFLICT(username) DO UPDATE SET username = excluded.username, sub = excluded.sub, claimed_at = excluded.claimed_at
            WHERE username_claims.sub = excluded.sub OR username_claims.claimed_at < ?4
            RETURNING sub
            """, [.text(username), .text(sub), .time(date), .time(claimsSince)])
        guard !claimed.isEmpty else { return false }
        try await database.query(
            "DELETE FROM username_claims WHERE sub = ? AND username <> ? COLLATE NOCASE", [.text(sub), .text(username)])
        return true
    }

    /// The trigger `registration_completes` (migration 4) raises the sessions and deletes the flow inside this
    /// statement; the unique index on the username decides races between two members.
    public func register(_ registration: Registration) async throws -> RegisterOutcome {
        do {
            let inserted = try await database.query(
                """
                INSERT INTO registrations (sub, username, registered_at, phone_number, display_name, discoverability, pin_hash, chat_user_id)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(sub) DO NOTHING RETURNING sub
                """,
                [
                    .text(registration.sub), .text(registration.username), .time(registration.registeredAt),
                    .text(try SealedColumn.phoneNumbers.seal(registration.phoneNumber.e164, key: registration.sub, with: keyring)),
                    .text(try SealedColumn.displayNames.seal(registration.displayName, key: registration.sub, with: keyring)),
                    .text(registration.discoverability.rawValue),
                    .text(registration.pinHash), registration.chatUserID.map { .text($0) } ?? .null,
                ])
            return inserted.isEmpty ? .alreadyRegistered : .registered
        } catch StorageError.query(let message) where message.contains("registrations.username") {
            return .usernameTaken
        }
    }

    public func registerExisting(sub: String, username: String, chatUserID: String, at date: Date) async throws -> RegisterOutcome {
        do {
            let inserted = try await database.query(
                """
                INSERT INTO registrations (sub, username, registered_at, chat_user_id, provisioned_at) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT(sub) DO NOTHING RETURNING sub
                """, [.text(sub), .text(username), .time(date), .text(chatUserID), .time(date)])
            return inserted.isEmpty ? .alreadyRegistered : .registered
        } catch StorageError.query(let message) where message.contains("registrations.username") {
            return .usernameTaken
        }
    }

    public func directoryEntries(limit: Int) async throws -> [DirectoryEntry] {
        try await database.query(
            """
            SELECT sub, username, chat_user_id, display_name, phone_number, discoverability, pin_hash FROM registrations
            WHERE chat_user_id IS NOT NULL ORDER BY username COLLATE NOCASE LIMIT ?
            """, [.integer(limit)]
        ).compactMap { row in
            guard let sub = row.column("sub")?.string, let username = row.column("username")?.string else { return nil }
            let phone = try row.column("phone_number")?.string.map { try SealedColumn.phoneNumbers.open($0, key: sub, with: keyring) }
            let name = try row.column("display_name")?.string.map { try SealedColumn.displayNames.open($0, key: sub, with: keyring) }
            let fromFlow = row.column("pin_hash")?.string != nil
            return DirectoryEntry(
                sub: sub, username: username, chatUserID: row.column("chat_user_id")?.string, displayName: name,
                phoneNumber: phone.flatMap(PhoneNumber.stored),
                discoverability: fromFlow ? row.column("discoverability")?.string.flatMap(Discoverability.init(rawValue:)) : nil)
        }
    }

    public func lookup(_ text: String) async throws -> MemberRegistration? {
        guard
            let row = try await database.query(
                """
                SELECT sub, username, chat_user_id, registered_at FROM registrations
                WHERE sub = ?1 OR username = ?1 COLLATE NOCASE OR chat_user_id = ?1 LIMIT 1
                """, [.text(text)]
            ).first,
            let sub = row.column("sub")?.string, let username = row.column("username")?.string
        else { return nil }
        return MemberRegistration(
            sub: sub, username: username, chatUserID: row.column("chat_user_id")?.string,
            registeredAt: Date(timeIntervalSince1970: row.column("registered_at")?.double ?? 0))
    }

    /// The trigger `registration_removed` lowers the sessions inside this statement.
    public func unregister(sub: String) async throws -> Bool {
        try await !database.query("DELETE FROM registrations WHERE sub = ? RETURNING sub", [.text(sub)]).isEmpty
    }

    public func dueForProvisioning(now: Date, maximumAttempts: Int, limit: Int) async throws -> [PendingProvisioning] {
        try await database.query(
            """
            SELECT sub, username, registered_at, phone_number, display_name, discoverability, provision_attempts FROM registrations
            WHERE provisioned_at IS NULL AND provision_attempts < ? AND (provision_next_at IS NULL OR provision_next_at <= ?)
            ORDER BY registered_at LIMIT ?
            """, [.integer(maximumAttempts), .time(now), .integer(limit)]
        ).compactMap { row in
            guard let sub = row.column("sub")?.string, let username = row.column("username")?.string,
                let phone = try row.column("phone_number")?.string.map({ try SealedColumn.phoneNumbers.open($0, key: sub, with: keyring) }),
                case .success(let phoneNumber) = PhoneNumber.parse(phone)
            else { return nil }
            let displayName = try row.column("display_name")?.string.map { try SealedColumn.displayNames.open($0, key: sub, with: keyring) }
            let registration = Registration(
                sub: sub, username: username, phoneNumber: phoneNumber, displayName: displayName ?? username,
                discoverability: row.column("discoverability")?.string.flatMap(Discoverability.init(rawValue:)) ?? .nobody, pinHash: "",
                registeredAt: Date(timeIntervalSince1970: row.column("registered_at")?.double ?? 0))
            return PendingProvisioning(registration: registration, attempts: row.column("provision_attempts")?.integer ?? 0)
        }
    }

    public func markProvisioned(sub: String, at date: Date) async throws {
        try await database.query(
            "UPDATE registrations SET provisioned_at = ?, provision_error = NULL WHERE sub = ?", [.time(date), .text(sub)])
    }

    public func markProvisioningFailed(sub: String, attempts: Int, nextAttemptAt: Date, error: String) async throws {
        try await database.query(
            "UPDATE registrations SET provision_attempts = ?, provision_next_at = ?, provision_error = ? WHERE sub = ?",
            [.integer(attempts), .time(nextAttemptAt), .text(error), .text(sub)])
    }

    public func provisioningBacklog(maximumAttempts: Int) async throws -> (waiting: Int, failed: Int) {
        let row = try await database.query(
            """
            SELECT COALESCE(SUM(provision_attempts < ?), 0) AS waiting, COALESCE(SUM(provision_attempts >= ?), 0) AS failed
            FROM registrations WHERE provisioned_at IS NULL
            """, [.integer(maximumAttempts), .integer(maximumAttempts)]
        ).first
        return (row?.column("waiting")?.integer ?? 0, row?.column("failed")?.integer ?? 0)
    }
}

public struct SQLiteRegistrationFlowStore: RegistrationFlowStore {
    let database: SQLiteDatabase
    let keyring: StorageKeyring

    public init(database: SQLiteDatabase, keyring: StorageKeyring) {
        self.database = database
        self.keyring = keyring
    }

    public func flow(sub: String) async throws -> RegistrationFlow? {
        guard let body = try await database.query("SELECT body FROM registration_flows WHERE sub = ?", [.text(sub)]).first?.column("body")?.string
        else { return nil }
        return try SealedColumn.flows.open(RegistrationFlow.self, body, key: sub, with: keyring)
    }

    public func save(_ flow: RegistrationFlow) async throws {
        try await database.query(
            """
            INSERT INTO registration_flows (sub, body, updated_at) VALUES (?, ?, ?)
            ON CONFLICT(sub) DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at
            """, [.text(flow.sub), .text(try SealedColumn.flows.seal(flow, key: flow.sub, with: keyring)), .time(flow.updatedAt)])
    }

    /// The flow's username claim goes with it.
    public func deleteFlow(sub: String) async throws -> Bool {
        try await database.query("DELETE FROM username_claims WHERE sub = ?", [.text(sub)])
        return try await !database.query("DELETE FROM registration_flows WHERE sub = ? RETURNING sub", [.text(sub)]).isEmpty
    }

    /// One statement: SQLite runs it alone on the shared connection, so the counts cannot change under it.
    public func reserveCodeSend(
        sub: String, phoneNumber: PhoneNumber, at date: Date, since: Date, perMember: Int, perPhoneNumber: Int
    ) async throws -> Result<Int, CodeSendRefusal> {
        let inserted = try await database.query(
            """
            INSERT INTO verification_sends (sub, phone_number, at)
            SELECT ?1, ?2, ?3
            WHERE (SELECT COUNT(*) FROM verification_sends WHERE sub = ?1 AND at >= ?4) < ?5
              AND (SELECT COUNT(*) FROM verification_sends WHERE phone_number = ?2 AND at >= ?4) < ?6
            RETURNING id
            """,
            [
                .text(sub), .text(keyring.lookupHash(phoneNumber.e164)), .time(date), .time(since), .integer(perMember),
                .integer(perPhoneNumber),
            ])
        if let id = inserted.first?.column("id")?.integer { return .success(id) }
        let memberCount = try await count("SELECT COUNT(*) AS n FROM verification_sends WHERE sub = ? AND at >= ?", [.text(sub), .time(since)])
        return .failure(memberCount >= perMember ? .memberLimit : .phoneNumberLimit)
    }

    public func releaseCodeSend(id: Int) async throws {
        try await database.query("DELETE FROM verification_sends WHERE id = ?", [.integer(id)])
    }

    /// The upsert's `WHERE` leaves a spent flow's row alone (`code_id` holds the flow's key), and then nothing is returned.
    public func claimCodeAttempt(flowKey: String, sub: String, maximum: Int, at date: Date) async throws -> Int? {
        try await database.query(
            """
            INSERT INTO code_attempts (code_id, sub, attempts, created_at) VALUES (?, ?, 1, ?)
            ON CONFLICT(code_id) DO UPDATE SET attempts = code_attempts.attempts + 1 WHERE code_attempts.attempts < ?
            RETURNING attempts
            """, [.text(flowKey), .text(sub), .time(date), .integer(maximum)]
        ).first?.column("attempts")?.integer
    }

    public func refundCodeAttempt(flowKey: String) async throws {
        try await database.query("UPDATE code_attempts SET attempts = attempts - 1 WHERE code_id = ? AND attempts > 0", [.text(flowKey)])
    }

    public func deleteStale(flowsBefore: Date, sendsBefore: Date) async throws -> Int {
        let flows = try await database.query("DELETE FROM registration_flows WHERE updated_at < ? RETURNING sub", [.time(flowsBefore)]).count
        let sends = try await database.query("DELETE FROM verification_sends WHERE at < ? RETURNING id", [.time(sendsBefore)]).count
        let tries = try await database.query("DELETE FROM code_attempts WHERE created_at < ? RETURNING code_id", [.time(sendsBefore)]).count
        let claims = try await database.query("DELETE FROM username_claims WHERE claimed_at < ? RETURNING sub", [.time(flowsBefore)]).count
        return flows + sends + tries + claims
    }

    private func count(_ sql: String, _ binds: [SQLiteData]) async throws -> Int {
        try await database.query(sql, binds).first?.column("n")?.integer ?? 0
    }
}
