import Foundation
import GatehouseCore
import PostgresNIO
import SQLiteNIO
import Testing

@testable import Gatehouse
@testable import GatehouseStorage

/// Secrets at rest: what a copy of the store shows (SQLite's rows and files, PostgreSQL's rows), values moved between
/// rows, clear rows of an older version sealed at the start, keys replaced, and the files' modes.
@Suite struct StorageEncryptionTests {
    /// Values a member's use puts in the store, each of which must not appear in it as written.
    static let secrets = [
        "id-token-7f3a", "access-token-9c1e", "refresh-token-44d0", "csrf-token-a1b2", "jar-cookie-value-5e6f", "verifier-0d9c",
        "nonce-77aa", "+15550100042", "Ada Display", "assertion-private-key-31",
    ]

    /// Stores one of each secret-holding row.
    static func storeEverything(_ stores: Stores) async throws -> Session {
        var session = SessionLifecycleTests.session(cookie: "ada-cookie", sub: "ada")
        session.tokens = TokenSet(
            idToken: "id-token-7f3a", accessToken: "access-token-9c1e", refreshToken: "refresh-token-44d0", accessTokenExpiresAt: Date())
        session.csrfToken = "csrf-token-a1b2"
        try await stores.sessions.insert(session)
        let origin = try #require(CookieOrigin(url: URL(string: "https://wiki.example.org/")!))
        try await stores.jars.modify(sessionID: session.id) { $0.store(setCookie: "sid=jar-cookie-value-5e6f; Path=/", from: origin) }
        try await stores.attempts.insert(
            LoginAttempt(state: "state-1", browserBindingHash: "b", nonce: "nonce-77aa", codeVerifier: "verifier-0d9c", returnTo: "/", createdAt: Date()))
        let phone = try PhoneNumber.parse("+15550100042").get()
        #expect(
            try await stores.registrations.register(
                Registration(
                    sub: "ada", username: "ada", phoneNumber: phone, displayName: "Ada Display", discoverability: .nobody, pinHash: "$2b$10$x",
                    registeredAt: Date())) == .registered)
        session.level = .registered  // the store raised it
        #expect(
            try await stores.flows.reserveCodeSend(
                sub: "bob", phoneNumber: phone, at: Date(), since: Date().addingTimeInterval(-60), perMember: 5, perPhoneNumber: 5
            ).get() > 0)
        var flow = RegistrationFlow(sub: "bob", returnTo: "/", now: Date())
        try flow.codeSent(to: phone, code: PendingCode.issue(now: Date(), rules: VerificationRules()).pending, now: Date())
        try await stores.flows.save(flow)
        #expect(try await stores.assertionKeys.add(AssertionKeyRecord(generation: 1, privateKey: "assertion-private-key-31", signsFrom: Date())))
        return session
    }

    /// Every value of every row of every table, as a copy of the database shows them.
    static func everythingStored(_ stores: Stores) async throws -> String {
        if let sqlite = stores.sqlite {
            var text = ""
            for table in try await sqlite.query("SELECT name FROM sqlite_master WHERE type = 'table'").compactMap({ $0.column("name")?.string }) {
                for row in try await sqlite.query("SELECT * FROM \(table)") {
                    text += row.columns.map { "\($0.data)" }.joined(separator: " ") + "\n"
                }
            }
            return text
        }
        let postgres = try #require(stores.shared)
        var text = ""
        let tables = try await postgres.query("SELECT table_name::text FROM information_schema.tables WHERE table_schema = 'public'")
            .map { try $0.decode(String.self) }
        for table in tables {
            for row in try await postgres.query(PostgresQuery(unsafeSQL: "SELECT t::text FROM \"\(table)\" t")) { text += try row.decode(String.self) + "\n" }
        }
        return text
    }

    @Test(arguments: StoreBackend.allCases) func aCopyOfTheStoreHoldsNoSecret(backend: StoreBackend) async throws {
        try await backend.withStores { stores in
            let session = try await Self.storeEverything(stores)
            let stored = try await Self.everythingStored(stores)
            #expect(stored.contains("ada") && stored.contains("gh1:"), "the dump is of the right store")
            for secret in Self.secrets { #expect(!stored.contains(secret), "\(secret) is stored in clear") }
            // …and the gateway reads every one of them back.
            let found = try #require(try await stores.sessions.find(id: session.id))
            #expect(Self.same(found, session))
            #expect(try await stores.jars.load(sessionID: session.id)?.cookies.map(\.value) == ["jar-cookie-value-5e6f"])
            #expect(try await stores.attempts.take(state: "state-1")?.codeVerifier == "verifier-0d9c")
            #expect(try await stores.registrations.account(sub: "ada")?.phoneNumber?.e164 == "+15550100042")
            #expect(try await stores.flows.flow(sub: "bob")?.phoneNumber?.e164 == "+15550100042")
            #expect(try await stores.assertionKeys.keys().map(\.privateKey) == ["assertion-private-key-31"])
            // The send is counted by its number's look-up hash.
            let phone = try PhoneNumber.parse("+15550100042").get()
            let since = Date().addingTimeInterval(-60)
            #expect(
                try await stores.flows.reserveCodeSend(sub: "carol", phoneNumber: phone, at: Date(), since: since, perMember: 5, perPhoneNumber: 1)
                    == .failure(.phoneNumberLimit))
            // SQL still reads and changes the clear parts of a session.
            try await stores.sessions.setFrame(FramePreferences(language: "de"), sessionID: session.id)
            #expect(try await stores.sessions.levels(now: Date(), idleCutoff: Date().addingTimeInterval(-600))["registered"]?.sessions == 1)
            #expect(try await stores.sessions.find(id: session.id)?.frame?.language == "de")
        }
    }

    /// A sealed value copied into another row (another member's session or jar) does not open there.
    @Test(arguments: StoreBackend.allCases) func aValueMovedToAnotherRowIsRefused(backend: StoreBackend) async throws {
        try await backend.withStores { stores in
            let ada = try await Self.storeEverything(stores)
            let mallory = SessionLifecycleTests.session(cookie: "mallory-cookie", sub: "mallory")
            try await stores.sessions.insert(mallory)
            try await stores.jars.modify(sessionID: mallory.id) { _ in }
            let origin = try #require(CookieOrigin(url: URL(string: "https://wiki.example.org/")!))
            try await stores.jars.modify(sessionID: mallory.id) { $0.store(setCookie: "own=1; Path=/", from: origin) }
            for table in ["sessions", "cookie_jars"] {
                let key = table == "sessions" ? "id" : "session_id"
                let copy = "UPDATE \(table) SET body = (SELECT body FROM \(table) WHERE \(key) = '\(ada.id)') WHERE \(key) = '\(mallory.id)'"
                if let sqlite = stores.sqlite {
                    try await sqlite.query(copy)
                } else {
                    try await #require(stores.shared).query(PostgresQuery(unsafeSQL: copy))
                }
            }
            await #expect(throws: StorageError.self) { try await stores.sessions.find(id: mallory.id) }
            await #expect(throws: StorageError.self) { try await stores.jars.load(sessionID: mallory.id) }
            #expect(Self.same(try await stores.sessions.find(id: ada.id), ada))
        }
    }

    /// Rows an older version stored in clear are sealed before the gateway serves; a new key put first takes over
    /// every value, after which the old key can go.
    @Test(arguments: StoreBackend.allCases) func clearRowsAreSealedAndKeysReplaced(backend: StoreBackend) async throws {
        try await backend.withStores { stores in
            let session = try await Self.storeEverything(stores)
            let access: any SealedRowAccess = try #require(stores.sqlite ?? stores.shared)
            // As an older version stored them: every sealed column in clear.
            for column in SealedColumn.all {
                for (key, value) in try await access.values(of: column) {
                    let clear: String
                    switch column.kind {
                    case .lookupHash: clear = "+15550100042"
                    case .sealed: clear = try column.open(value, key: key, with: .forTests)
                    case .sessionBody: clear = try RowCoding.encode(try SessionRow.decode(value, id: key, with: .forTests))
                    }
                    try await access.replace(column, key: key, old: value, new: clear)
                }
            }
            #expect(try await Self.everythingStored(stores).contains("refresh-token-44d0"))
            let first = try await Resealing.run(access, keyring: .forTests)
            #expect(first == ResealReport(sealed: 8, rekeyed: 0, unreadable: 0))
            for secret in Self.secrets { #expect(!(try await Self.everythingStored(stores)).contains(secret)) }
            #expect(try await Resealing.run(access, keyring: .forTests) == ResealReport())

            // A new key first, the old one after it: everything moves to the new key.
            let newKey = StorageKeyring.newKeyText()
            let both = try StorageKeyring.parse(newKey + Self.keyText(.forTests))
            #expect(try await Resealing.run(access, keyring: both) == ResealReport(sealed: 0, rekeyed: 7, unreadable: 0))
            let onlyNew = try StorageKeyring.parse(newKey)
            let rekeyed = try stores.sqlite.map { Stores.sqlite($0, keyring: onlyNew) } ?? Stores.postgres(#require(stores.shared), keyring: onlyNew)
            #expect(Self.same(try await rekeyed.sessions.find(id: session.id), session))
            #expect(try await rekeyed.jars.load(sessionID: session.id)?.cookies.map(\.value) == ["jar-cookie-value-5e6f"])
            #expect(try await rekeyed.registrations.account(sub: "ada")?.phoneNumber?.e164 == "+15550100042")
            #expect(try await rekeyed.assertionKeys.keys().map(\.privateKey) == ["assertion-private-key-31"])
            // The old key alone opens nothing any more.
            await #expect(throws: StorageError.self) { try await stores.sessions.find(id: session.id) }
        }
    }

    /// The same session, but for the sub-second part of its times (stored as JSON numbers).
    static func same(_ found: Session?, _ session: Session) -> Bool {
        guard let found else { return false }
        return found.id == session.id && found.identity == session.identity && found.tokens.idToken == session.tokens.idToken
            && found.tokens.accessToken == session.tokens.accessToken && found.tokens.refreshToken == session.tokens.refreshToken
            && found.csrfToken == session.csrfToken && found.level == session.level && abs(found.expiresAt.timeIntervalSince(session.expiresAt)) < 0.001
    }

    static func keyText(_ keyring: StorageKeyring) throws -> String {
        keyring.keys.map { key in key.key.withUnsafeBytes { Data($0).base64EncodedString() } }.joined(separator: "\n")
    }

    /// The database file, its write-ahead log and its folder are the gateway's user's alone, and the log holds no
    /// secret either.
    @Test func theSQLiteFilesAreOwnerOnlyAndHoldNoSecret() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/state/gatehouse.sqlite"
        let previous = umask(0o022)
        defer { umask(previous) }
        let database = try await SQLiteDatabase.open(path: path, logger: StoreBackend.logger)
        try await Stores.sqlite(database, keyring: .forTests).whileRunning { stores in
            _ = try await Self.storeEverything(stores)
            // Read while open: closing checkpoints the log into the file and removes it.
            var all = ""
            for file in [path, path + "-wal"] {
                let mode = try #require(try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int)
                #expect(mode & 0o777 == 0o600, "\(file) is \(String(mode, radix: 8))")
                let bytes = try String(decoding: Data(contentsOf: URL(fileURLWithPath: file)), as: UTF8.self)
                for secret in Self.secrets { #expect(!bytes.contains(secret), "\(secret) in \(file)") }
                all += bytes
            }
            #expect(all.contains("gh1:"), "the files hold the rows")
        }
        let folderMode = try #require(try FileManager.default.attributesOfItem(atPath: folder + "/state")[.posixPermissions] as? Int)
        #expect(folderMode & 0o777 == 0o700)
        try await database.close()
        // A file an older version left readable to others is made owner-only when opened.
        chmod(path, 0o644)
        let reopened = try await SQLiteDatabase.open(path: path, logger: StoreBackend.logger)
        #expect(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int == 0o600)
        try await reopened.close()
    }

    /// No key, no store; development mode makes one, owner-only, and keeps it.
    @Test func theKeyIsRequiredAndDevelopmentModeKeepsItsOwn() async throws {
        await #expect(throws: StorageError.self) { try StorageKeySource.missing.keyring() }
        #expect(throws: StorageKeyError.wrongLength) { try StorageKeyring.parse(Data(repeating: 1, count: 16).base64EncodedString()) }
        #expect(throws: StorageKeyError.notBase64) { try StorageKeyring.parse("not a key!") }
        #expect(throws: StorageKeyError.missing) { try StorageKeyring.parse("# only a comment\n") }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = StorageConfiguration.developmentKeyPath(in: folder)
        let made = try StorageKeySource.developmentFile(path).keyring()
        #expect(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int == 0o600)
        #expect(try StorageKeySource.developmentFile(path).keyring().sealingKeyID == made.sealingKeyID)
    }
}
