import Foundation
import SQLiteNIO

public struct SQLiteMatrixDeviceStore: MatrixDeviceStore {
    let database: SQLiteDatabase
    let keyring: StorageKeyring

    public init(database: SQLiteDatabase, keyring: StorageKeyring) {
        self.database = database
        self.keyring = keyring
    }

    static let columns = "session_id, sub, user_id, device_id, access_token, created_at, push"

    public func insert(_ device: StoredMatrixDevice) async throws -> Bool {
        let token = try SealedColumn.matrixTokens.seal(device.accessToken, key: device.sessionID, with: keyring)
        return try await !database.query(
            "INSERT INTO matrix_devices (\(Self.columns)) VALUES (?, ?, ?, ?, ?, ?, NULL) ON CONFLICT DO NOTHING RETURNING session_id",
            [.text(device.sessionID), .text(device.sub), .text(device.userID), .text(device.deviceID), .text(token), .time(device.createdAt)]
        ).isEmpty
    }

    public func device(sessionID: String) async throws -> StoredMatrixDevice? {
        try devices(await database.query("SELECT \(Self.columns) FROM matrix_devices WHERE session_id = ?", [.text(sessionID)])).first
    }

    public func ending(limit: Int) async throws -> [StoredMatrixDevice] {
        try devices(
            await database.query(
                """
                SELECT \(Self.columns) FROM matrix_devices d WHERE NOT EXISTS (
                    SELECT 1 FROM sessions s WHERE s.id = d.session_id AND json_extract(s.body, '$.level') = 'registered')
                LIMIT ?
                """, [.integer(limit)]))
    }

    public func all(limit: Int) async throws -> [StoredMatrixDevice] {
        try devices(await database.query("SELECT \(Self.columns) FROM matrix_devices ORDER BY created_at LIMIT ?", [.integer(limit)]))
    }

    public func delete(sessionID: String, deviceID: String) async throws {
        try await database.query("DELETE FROM matrix_devices WHERE session_id = ? AND device_id = ?", [.text(sessionID), .text(deviceID)])
    }

    public func setPush(sessionID: String, deviceID: String, _ push: StoredPush?) async throws -> Bool {
        let sealed = try push.map { try SealedColumn.pushSubscriptions.seal($0, key: sessionID, with: keyring) }
        return try await !database.query(
            "UPDATE matrix_devices SET push_key = ?, push = ? WHERE session_id = ? AND device_id = ? RETURNING session_id",
            [push.map { .text($0.keyHash) } ?? .null, sealed.map { .text($0) } ?? .null, .text(sessionID), .text(deviceID)]
        ).isEmpty
    }

    public func device(pushKeyHash: String) async throws -> StoredMatrixDevice? {
        try devices(await database.query("SELECT \(Self.columns) FROM matrix_devices WHERE push_key = ?", [.text(pushKeyHash)])).first
    }

    func devices(_ rows: [SQLiteRow]) throws -> [StoredMatrixDevice] {
        try rows.compactMap { row in
            guard let sessionID = row.column("session_id")?.string, let sub = row.column("sub")?.string, let userID = row.column("user_id")?.string,
                let deviceID = row.column("device_id")?.string, let sealed = row.column("access_token")?.string,
                let created = row.column("created_at")?.double
            else { return nil }
            return StoredMatrixDevice(
                sessionID: sessionID, sub: sub, userID: userID, deviceID: deviceID,
                accessToken: try SealedColumn.matrixTokens.open(sealed, key: sessionID, with: keyring), createdAt: Date(timeIntervalSince1970: created),
                push: try row.column("push")?.string.map { try SealedColumn.pushSubscriptions.open(StoredPush.self, $0, key: sessionID, with: keyring) })
        }
    }
}
