import Foundation
import GatehouseCore
import PostgresNIO

public struct PostgresRegistrationStore: RegistrationStore {
    let database: PostgresDatabase
    let keyring: StorageKeyring

    public init(database: PostgresDatabase, keyring: StorageKeyring) {
        self.database = database
        self.keyring = keyring
    }

    public func account(sub: String) async throws -> RegisteredAccount? {
        guard
            let row = try await database.query(
                "SELECT username, phone_number, chat_user_id, display_name, discoverability, pin_hash IS NOT NULL FROM registrations WHERE sub = \(sub)"
            ).first
        else { return nil }
        let (username, sealedPhone, chatUserID, sealedName, discoverability, fromFlow) = try PostgresDatabase.decoding {
            try row.decode((String, String?, String?, String?, String, Bool).self)
        }
        let phone = try sealedPhone.map { try SealedColumn.phoneNumbers.open($0, key: sub, with: keyring) }
        let displayName = try sealedName.map { try SealedColumn.displayNames.open($0, key: sub, with: keyring) }
        // Accounts found on the homeserver have no profile of the flow's: no discoverability either.
        return RegisteredAccount(
            username: username, phoneNumber: phone.flatMap(PhoneNumber.stored), chatUserID: chatUserID, displayName: displayName,
            discoverability: fromFlow ? Discoverability(rawValue: discoverability) : nil)
    }

    public func pinHash(sub: String) async throws -> String? {
        guard let row = try await database.query("SELECT pin_hash FROM registrations WHERE sub = \(sub)").first else { return nil }
        return try PostgresDatabase.decoding { try row.decode(String?.self) }
    }

    public func updateAccount(sub: String, displayName: String?, discoverability: Discoverability?, phoneNumber: PhoneNumber?) async throws {
        let sealedName = try displayName.map { try SealedColumn.displayNames.seal($0, key: sub, with: keyring) }
        let sealedPhone = try phoneNumber.map { try SealedColumn.phoneNumbers.seal($0.e164, key: sub, with: keyring) }
        try await database.query(
            """
            UPDATE registrations SET display_name = COALESCE(\(sealedName), display_name),
                discoverability = COALESCE(\(discoverability?.rawValue), discoverability), phone_number = COALESCE(\(sealedPhone), phone_number)
            WHERE sub = \(sub)
            """)
    }

    public func isUsernameTaken(_ username: String, for sub: String, claimsSince: Date) async throws -> Bool {
        try await !database.query(
            """
            SELECT 1 FROM registrations WHERE lower(username) = lower(\(username))
            UNION ALL SELECT 1 FROM username_claims WHERE username_key = lower(\(username)) AND sub <> \(sub) AND claimed_at >= \(claimsSince)
            """
        ).isEmpty
    }

    /// The upsert takes the row when it is the member's own claim or a stale one (two members' inserts of one name
    /// meet at the primary key: one waits for the other and then sees its row). The `WHERE` of the insert keeps
    /// registered names out.
    public func claimUsername(_ username: String, for sub: String, at date: Date, claimsSince: Date) async throws -> Bool {
        try await database.transaction { connection in
            let claimed = try await connection.query(
                """
                INSERT INTO username_claims (username_key, sub, claimed_at)
                SELECT lower(\(username)), \(sub), \(date)
                WHERE NOT EXISTS (SELECT 1 FROM registrations WHERE lower(username) = lower(\(username)))
                ON CONFLICT (username_key) DO UPDATE SET sub = excluded.sub, claimed_at = excluded.claimed_at
                WHERE username_claims.sub = excluded.sub OR username_claims.claimed_at < \(claimsSince)
                RETURNING sub
                """)
            guard !claimed.isEmpty else { return false }
            try await connection.query("DELETE FROM username_claims WHERE sub = \(sub) AND username_key <> lower(\(username))")
            return true
        }
    }

    /// The trigger `registration_completes` raises the sessions and deletes the flow inside this statement; the
    /// unique index on the lower-cased username decides races between two members.
    public func register(_ registration: Registration) async throws -> RegisterOutcome {
        let phone = try SealedColumn.phoneNumbers.seal(registration.phoneNumber.e164, key: registration.sub, with: keyring)
        let displayName = try SealedColumn.displayNames.seal(registration.displayName, key: registration.sub, with: keyring)
        do {
            let inserted = try await database.query(
                """
                INSERT INTO registrations (sub, username, registered_at, phone_number, display_name, discoverability, pin_hash, chat_user_id)
                VALUES (\(registration.sub), \(registration.username), \(registration.registeredAt), \(phone),
                    \(displayName), \(registration.discoverability.rawValue), \(registration.pinHash), \(registration.chatUserID))
                ON CONFLICT (sub) DO NOTHING RETURNING sub
                """)
            return inserted.isEmpty ? .alreadyRegistered : .registered
        } catch StorageError.uniqueViolation(let index) where index == "registrations_username" {
            return .usernameTaken
        }
    }

    public func registerExisting(sub: String, username: String, chatUserID: String, at date: Date) async throws -> RegisterOutcome {
        do {
            let inserted = try await database.query(
                """
                INSERT INTO registrations (sub, username, registered_at, chat_user_id, provisioned_at)
                VALUES (\(sub), \(username), \(date), \(chatUserID), \(date))
                ON CONFLICT (sub) DO NOTHING RETURNING sub
                """)
            return inserted.isEmpty ? .alreadyRegistered : .registered
        } catch StorageError.uniqueViolation(let index) where index == "registrations_username" {
            return .usernameTaken
        }
    }

    public func directoryEntries(limit: Int) async throws -> [DirectoryEntry] {
        try await database.query(
            """
            SELECT sub, username, chat_user_id, display_name, phone_number, discoverability, pin_hash IS NOT NULL FROM registrations
            WHERE chat_user_id IS NOT NULL ORDER BY lower(username) LIMIT \(limit)
            """
        ).map { row in
            let (sub, username, chatUserID, sealedName, sealedPhone, discoverability, fromFlow) = try PostgresDatabase.decoding {
                try row.decode((String, String, String?, String?, String?, String, Bool).self)
            }
            let phone = try sealedPhone.map { try SealedColumn.phoneNumbers.open($0, key: sub, with: keyring) }
            let name = try sealedName.map { try SealedColumn.displayNames.open($0, key: sub, with: keyring) }
            return DirectoryEntry(
                sub: sub, username: username, chatUserID: chatUserID, displayName: name, phoneNumber: phone.flatMap(PhoneNumber.stored),
                discoverability: fromFlow ? Discoverability(rawValue: discoverability) : nil)
        }
    }

    public func lookup(_ text: String) async throws -> MemberRegistration? {
        guard
            let row = try await database.query(
                """
                SELECT sub, username, chat_user_id, registered_at FROM registrations
                WHERE sub = \(text) OR lower(username) = lower(\(text)) OR chat_user_id = \(text) LIMIT 1
                """
            ).first
        else { return nil }
        let (sub, username, chatUserID, registeredAt) = try PostgresDatabase.decoding { try row.decode((String, String, String?, Date).self) }
        return MemberRegistration(sub: sub, username: username, chatUserID: chatUserID, registeredAt: registeredAt)
    }

    /// The trigger `registration_removed` lowers the sessions inside this statement (and every replica hears of it).
    public func unregister(sub: String) async throws -> Bool {
        try await !database.query("DELETE FROM registrations WHERE sub = \(sub) RETURNING sub").isEmpty
    }

    public func dueForProvisioning(now: Date, maximumAttempts: Int, limit: Int) async throws -> [PendingProvisioning] {
        try await database.query(
            """
            SELECT sub, username, registered_at, phone_number, display_name, discoverability, provision_attempts FROM registrations
            WHERE provisioned_at IS NULL AND provision_attempts < \(maximumAttempts)
              AND (provision_next_at IS NULL OR provision_next_at <= \(now))
            ORDER BY registered_at LIMIT \(limit)
            """
        ).compactMap { row in
            let (sub, username, registeredAt, sealedPhone, sealedName, discoverability, attempts) = try PostgresDatabase.decoding {
                try row.decode((String, String, Date, String?, String?, String, Int).self)
            }
            let phone = try sealedPhone.map { try SealedColumn.phoneNumbers.open($0, key: sub, with: keyring) }
            let displayName = try sealedName.map { try SealedColumn.displayNames.open($0, key: sub, with: keyring) }
            guard let phone, case .success(let phoneNumber) = PhoneNumber.parse(phone) else { return nil }
            let registration = Registration(
                sub: sub, username: username, phoneNumber: phoneNumber, displayName: displayName ?? username,
                discoverability: Discoverability(rawValue: discoverability) ?? .nobody, pinHash: "", registeredAt: registeredAt)
            return PendingProvisioning(registration: registration, attempts: attempts)
        }
    }

    public func markProvisioned(sub: String, at date: Date) async throws {
        try await database.query("UPDATE registrations SET provisioned_at = \(date), provision_error = NULL WHERE sub = \(sub)")
    }

    public func markProvisioningFailed(sub: String, attempts: Int, nextAttemptAt: Date, error: String) async throws {
        try await database.query(
            """
            UPDATE registrations SET provision_attempts = \(attempts), provision_next_at = \(nextAttemptAt), provision_error = \(error)
            WHERE sub = \(sub)
            """)
    }

    public func provisioningBacklog(maximumAttempts: Int) async throws -> (waiting: Int, failed: Int) {
        guard
            let row = try await database.query(
                """
                SELECT COUNT(*) FILTER (WHERE provision_attempts < \(maximumAttempts)),
                       COUNT(*) FILTER (WHERE provision_attempts >= \(maximumAttempts))
                FROM registrations WHERE provisioned_at IS NULL
                """
            ).first
        else { return (0, 0) }
        return try PostgresDatabase.decoding { try row.decode((Int, Int).self) }
    }
}

public struct PostgresRegistrationFlowStore: RegistrationFlowStore {
    let database: PostgresDatabase
    let keyring: StorageKeyring

    public init(database: PostgresDatabase, keyring: StorageKeyring) {
        self.database = database
        self.keyring = keyring
    }

    public func flow(sub: String) async throws -> RegistrationFlow? {
        try await database.sealedBody(RegistrationFlow.self, .flows, key: sub, keyring, "SELECT body FROM registration_flows WHERE sub = \(sub)")
    }

    public func save(_ flow: RegistrationFlow) async throws {
        let body = try SealedColumn.flows.seal(flow, key: flow.sub, with: keyring)
        try await database.query(
            """
            INSERT INTO registration_flows (sub, body, updated_at) VALUES (\(flow.sub), \(body), \(flow.updatedAt))
            ON CONFLICT (sub) DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at
            """)
    }

    /// The flow's username claim goes with it.
    public func deleteFlow(sub: String) async throws -> Bool {
        try await !database.query(
            """
            WITH released AS (DELETE FROM username_claims WHERE sub = \(sub))
            DELETE FROM registration_flows WHERE sub = \(sub) RETURNING sub
            """
        ).isEmpty
    }

    /// Under READ COMMITTED two transactions could both count below the limit and both insert, so each takes the
    /// member's and then the number's advisory lock first (always in that order: no deadlock between members sharing
    /// a number); the counts and the insert then happen one reservation at a time.
    public func reserveCodeSend(
        sub: String, phoneNumber: PhoneNumber, at date: Date, since: Date, perMember: Int, perPhoneNumber: Int
    ) async throws -> Result<Int, CodeSendRefusal> {
        let number = keyring.lookupHash(phoneNumber.e164)
        return try await database.transaction { transaction in
            try await transaction.query("SELECT pg_advisory_xact_lock(\(Self.memberLockClass), hashtext(\(sub)))")
            try await transaction.query("SELECT pg_advisory_xact_lock(\(Self.numberLockClass), hashtext(\(number)))")
            let counts = try await transaction.query(
                """
                SELECT (SELECT COUNT(*) FROM verification_sends WHERE sub = \(sub) AND at >= \(since)),
                       (SELECT COUNT(*) FROM verification_sends WHERE phone_number = \(number) AND at >= \(since))
                """
            ).first
            let (memberCount, numberCount) = try PostgresDatabase.decoding { try counts?.decode((Int, Int).self) ?? (0, 0) }
            if memberCount >= perMember { return .failure(.memberLimit) }
            if numberCount >= perPhoneNumber { return .failure(.phoneNumberLimit) }
            let inserted = try await transaction.query(
                "INSERT INTO verification_sends (sub, phone_number, at) VALUES (\(sub), \(number), \(date)) RETURNING id")
            guard let row = inserted.first else { throw StorageError.query("verification_sends: no id returned") }
            return .success(try PostgresDatabase.decoding { try row.decode(Int.self) })
        }
    }

    static let memberLockClass: Int32 = 1
    static let numberLockClass: Int32 = 2

    public func releaseCodeSend(id: Int) async throws {
        try await database.query("DELETE FROM verification_sends WHERE id = \(id)")
    }

    /// `ON CONFLICT … DO UPDATE` locks the row, so concurrent claims line up; the `WHERE` leaves a spent flow's row
    /// alone, and then nothing is returned.
    public func claimCodeAttempt(flowKey: String, sub: String, maximum: Int, at date: Date) async throws -> Int? {
        guard
            let row = try await database.query(
                """
                INSERT INTO code_attempts (code_id, sub, attempts, created_at) VALUES (\(flowKey), \(sub), 1, \(date))
                ON CONFLICT (code_id) DO UPDATE SET attempts = code_attempts.attempts + 1 WHERE code_attempts.attempts < \(maximum)
                RETURNING attempts
                """
            ).first
        else { return nil }
        return try PostgresDatabase.decoding { try row.decode(Int.self) }
    }

    public func refundCodeAttempt(flowKey: String) async throws {
        try await database.query("UPDATE code_attempts SET attempts = attempts - 1 WHERE code_id = \(flowKey) AND attempts > 0")
    }

    public func deleteStale(flowsBefore: Date, sendsBefore: Date) async throws -> Int {
        let flows = try await database.query("DELETE FROM registration_flows WHERE updated_at < \(flowsBefore) RETURNING sub").count
        let sends = try await database.query("DELETE FROM verification_sends WHERE at < \(sendsBefore) RETURNING id").count
        let tries = try await database.query("DELETE FROM code_attempts WHERE created_at < \(sendsBefore) RETURNING code_id").count
        let claims = try await database.query("DELETE FROM username_claims WHERE claimed_at < \(flowsBefore) RETURNING sub").count
        return flows + sends + tries + claims
    }
}
