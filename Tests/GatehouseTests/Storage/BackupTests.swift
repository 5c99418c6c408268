import Foundation
import GatehouseCore
import Testing

@testable import Gatehouse
@testable import GatehouseStorage

/// `gatehouse storage backup` and `restore` on SQLite, and the schema version a store records: a backup taken while
/// the gateway writes is whole and restores to the same rows; a restore refuses what it cannot put back safely; a
/// Gatehouse refuses a store a newer one migrated, and an upgrade keeps the store as it found it.
@Suite struct BackupTests {
    static func folder() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-backup-\(UUID().uuidString)").path
    }

    /// Every row of every table but the readiness probe's, as text, in a stable order.
    static func rows(_ database: SQLiteDatabase) async throws -> [String] {
        var rows: [String] = []
        let tables = try await database.query("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT IN ('readiness', 'sqlite_sequence') ORDER BY name")
        for table in tables.compactMap({ $0.column("name")?.string }) {
            for row in try await database.query("SELECT * FROM \(table)") {
                rows.append(table + ": " + row.columns.map { "\($0.data)" }.joined(separator: " | "))
            }
        }
        return rows.sorted()
    }

    @Test func aBackupTakenWhileTheGatewayWritesRestoresTheSameRows() async throws {
        let folder = Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let store = folder + "/live/gatehouse.sqlite"
        let backup = folder + "/backups/gatehouse-1.sqlite"
        let database = try await SQLiteDatabase.open(path: store, logger: StoreBackend.logger)
        let (session, held) = try await Stores.sqlite(database, keyring: .forTests).whileRunning { stores in
            let session = try await StorageEncryptionTests.storeEverything(stores)
            // Writes go on while the backup is taken: the copy is one moment's, whole, whatever it caught.
            let writer = Task {
                var written = 0
                // Until cancelled (a cancelled write fails).
                while (try? await stores.events.append([GatewayEvent(name: .ssoLoginSuccess, sub: "writer-\(written)", detail: "d")])) != nil {
                    written += 1
                }
                return written
            }
            try await Task.sleep(for: .milliseconds(20))
            let held = try await SQLiteBackup.backup(store: store, to: backup, keyring: .forTests, logger: StoreBackend.logger)
            writer.cancel()
            #expect(await writer.value > 0)
            return (session, held)
        }
        #expect(held.schemaVersion == SQLiteDatabase.schemaVersion)
        #expect(held.rows.first { $0.table == "sessions" }?.count == 1)
        #expect(held.sealedBy == [StorageKeyring.forTests.sealingKeyID: held.sealedBy.values.reduce(0, +)] && held.unreadable == 0)
        #expect(try FileManager.default.attributesOfItem(atPath: backup)[.posixPermissions] as? Int == 0o600)
        #expect("\(held)".contains("sessions: 1 row(s)"))
        // A backup never overwrites.
        await #expect(throws: BackupRefusal.self) {
            try await SQLiteBackup.backup(store: store, to: backup, keyring: .forTests, logger: StoreBackend.logger)
        }

        let restored = folder + "/restored/gatehouse.sqlite"
        let restoredHeld = try await SQLiteBackup.restore(from: backup, to: restored, keyring: .forTests, logger: StoreBackend.logger)
        #expect(restoredHeld.rows.map(\.count) == held.rows.map(\.count))
        let copy = try await SQLiteDatabase.open(path: restored, logger: StoreBackend.logger)
        let original = try await SQLiteDatabase.withExisting(path: backup, logger: StoreBackend.logger) { try await Self.rows($0) }
        #expect(try await Self.rows(copy) == original)
        // The member's session opens from the restored store, tokens and all.
        try await Stores.sqlite(copy, keyring: .forTests).whileRunning { stores in
            let found = try #require(try await stores.sessions.find(id: session.id))
            #expect(StorageEncryptionTests.same(found, session))
            #expect(try await stores.registrations.account(sub: "ada")?.displayName == "Ada Display")
        }
        try await copy.close()
    }

    @Test func aRestoreRefusesWhatItCannotPutBackSafely() async throws {
        let folder = Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let store = folder + "/live/gatehouse.sqlite"
        let backup = folder + "/backup.sqlite"
        let database = try await SQLiteDatabase.open(path: store, logger: StoreBackend.logger)
        _ = try await Stores.sqlite(database, keyring: .forTests).whileRunning { try await StorageEncryptionTests.storeEverything($0) }
        _ = try await SQLiteBackup.backup(store: store, to: backup, keyring: .forTests, logger: StoreBackend.logger)
        try await database.close()

        func refusal(from file: String, to target: String, keyring: StorageKeyring = .forTests) async -> String {
            do {
                _ = try await SQLiteBackup.restore(from: file, to: target, keyring: keyring, logger: StoreBackend.logger)
                return "restored"
            } catch {
                #expect(!FileManager.default.fileExists(atPath: target) || target == store, "a refused restore left \(target)")
                return "\(error)"
            }
        }
        // Over a store that is there.
        #expect(await refusal(from: backup, to: store).contains("a store is already at"))
        // With a key that does not open it: the message names the key it needs.
        let otherKey = try StorageKeyring.parse(StorageKeyring.newKeyText())
        let wrongKey = await refusal(from: backup, to: folder + "/a/gatehouse.sqlite", keyring: otherKey)
        #expect(wrongKey.contains("do not open") && wrongKey.contains(StorageKeyring.forTests.sealingKeyID), "\(wrongKey)")
        // The old key kept after a new one still opens it.
        let rotated = try StorageKeyring(keys: [otherKey.keys[0].key, StorageKeyring.forTests.keys[0].key])
        #expect(await refusal(from: backup, to: folder + "/b/gatehouse.sqlite", keyring: rotated) == "restored")
        // Not a database, a truncated one, or none at all.
        let garbage = folder + "/garbage.sqlite"
        try Data("not a database".utf8).write(to: URL(fileURLWithPath: garbage))
        #expect(await refusal(from: garbage, to: folder + "/c/gatehouse.sqlite") != "restored")
        let truncated = folder + "/truncated.sqlite"
        try Data(try Data(contentsOf: URL(fileURLWithPath: backup)).prefix(8192)).write(to: URL(fileURLWithPath: truncated))
        #expect(await refusal(from: truncated, to: folder + "/d/gatehouse.sqlite") != "restored")
        #expect(await refusal(from: folder + "/missing.sqlite", to: folder + "/e/gatehouse.sqlite").contains("no SQLite database"))
        // A backup of a newer schema goes back with the Gatehouse that made it.
        try await SQLiteDatabase.withExisting(path: backup, logger: StoreBackend.logger) { database in
            try await database.query("INSERT INTO schema_migrations (version, applied_at) VALUES (?, 0)", [.integer(SQLiteDatabase.schemaVersion + 1)])
        }
        #expect(await refusal(from: backup, to: folder + "/f/gatehouse.sqlite").contains("restore it with the Gatehouse that made it"))
    }

    @Test func aStoreANewerGatehouseMigratedIsRefusedNamingBothVersionsAndTheWayBack() async throws {
        let folder = Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let store = folder + "/gatehouse.sqlite"
        try await SQLiteDatabase.open(path: store, logger: StoreBackend.logger).close()
        try await SQLiteDatabase.withExisting(path: store, logger: StoreBackend.logger) { database in
            try await database.query("INSERT INTO schema_migrations (version, applied_at) VALUES (?, 0)", [.integer(SQLiteDatabase.schemaVersion + 1)])
        }
        let refusal = await #expect(throws: StorageError.self) { try await SQLiteDatabase.open(path: store, logger: StoreBackend.logger) }
        let message = "\(try #require(refusal))"
        #expect(message.contains("schema version \(SQLiteDatabase.schemaVersion + 1)"), "\(message)")
        #expect(message.contains("up to \(SQLiteDatabase.schemaVersion)") && message.contains("gatehouse storage restore"), "\(message)")
        #expect(refusal?.reason == "storage_schema_newer")
    }

    @Test func postgresRefusesAStoreANewerGatehouseMigrated() async throws {
        let url = try await TestPostgres.freshDatabase()
        let database = try TestPostgres.connect(url)
        try await whileRunning(database) {
            try await database.migrate()
            try await database.query("INSERT INTO schema_migrations (version, applied_at) VALUES (\(PostgresDatabase.migrations.count + 1), now())")
            let refusal = await #expect(throws: StorageError.self) { try await database.migrate() }
            let message = "\(try #require(refusal))"
            #expect(message.contains("schema version \(PostgresDatabase.migrations.count + 1)") && message.contains("pg_restore"), "\(message)")
        }
    }

    /// An upgrade copies the store before it migrates it; the older Gatehouse's refusal then names that copy.
    @Test func anUpgradeKeepsTheStoreAsItFoundIt() async throws {
        let folder = Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let store = folder + "/gatehouse.sqlite"
        let latest = SQLiteDatabase.schemaVersion
        // A store as the Gatehouse before the last migration left it (that migration undone), with a member in it.
        let database = try await SQLiteDatabase.open(path: store, logger: StoreBackend.logger)
        let session = try await Stores.sqlite(database, keyring: .forTests).whileRunning { stores in
            let session = try await StorageEncryptionTests.storeEverything(stores)
            // (The last migration keeps a browser's push subscription with its device.)
            try await database.query("DROP INDEX matrix_devices_push_key")
            for column in ["push", "push_key"] { try await database.query("ALTER TABLE matrix_devices DROP COLUMN \(column)") }
            try await database.query("DELETE FROM schema_migrations WHERE version = ?", [.integer(latest)])
            return session
        }

        let upgraded = try await SQLiteDatabase.open(path: store, logger: StoreBackend.logger)
        #expect(try await upgraded.schemaVersion() == latest)
        try await upgraded.close()
        let copy = SQLiteDatabase.copyBeforeUpgrade(of: store, from: latest - 1)
        let kept = try await SQLiteDatabase.withExisting(path: copy, logger: StoreBackend.logger) { kept in
            (try await kept.schemaVersion(), try await kept.query("SELECT id FROM sessions").first?.column("id")?.string)
        }
        #expect(kept.0 == latest - 1 && kept.1 == session.id)
        // Opened again, nothing more to copy: the kept copy stays the one the upgrade made.
        let before = try FileManager.default.attributesOfItem(atPath: copy)[.modificationDate] as? Date
        try await SQLiteDatabase.open(path: store, logger: StoreBackend.logger).close()
        #expect(try FileManager.default.attributesOfItem(atPath: copy)[.modificationDate] as? Date == before)
        // A newer Gatehouse's upgrade from this one's version kept a copy: this one's refusal names it.
        let newerCopy = SQLiteDatabase.copyBeforeUpgrade(of: store, from: latest)
        try await SQLiteDatabase.withExisting(path: store, logger: StoreBackend.logger) { database in
            try await database.vacuum(into: newerCopy)
            try await database.query("INSERT INTO schema_migrations (version, applied_at) VALUES (?, 0)", [.integer(latest + 1)])
        }
        let refusal = await #expect(throws: StorageError.self) { try await SQLiteDatabase.open(path: store, logger: StoreBackend.logger) }
        #expect("\(try #require(refusal))".contains(newerCopy))
    }
}
