import Foundation
import PostgresNIO

public struct PostgresMatrixDeviceStore: MatrixDeviceStore {
    let database: PostgresDatabase
    let keyring: StorageKeyring

    public init(database: PostgresDatabase, keyring: StorageKeyring) {
        self.database = database
        self.keyring = keyring
    }

    public func insert(_ device: StoredMatrixDevice) async throws -> Bool {
        let token = try SealedColumn.matrixTokens.seal(device.accessToken, key: device.sessionID, with: keyring)
        return try await !database.query(
            """
            INSERT INTO matrix_devices (session_id, sub, user_id, device_id, access_token, created_at)
            VALUES (\(device.sessionID), \(device.sub), \(device.userID), \(device.deviceID), \(token), \(device.createdAt))
            ON CONFLICT DO NOTHING RETURNING session_id
            """
        ).isEmpty
    }

    public func device(sessionID: String) async throws -> StoredMatrixDevice? {
        try devices(
            await database.query(
                "SELECT session_id, sub, user_id, device_id, access_token, created_at FROM matrix_devices WHERE session_id = \(sessionID)")
        ).first
    }

    public func ending(limit: Int) async throws -> [StoredMatrixDevice] {
        try devices(
            await database.query(
                """
                SELECT session_id, sub, user_id, device_id, access_token, created_at FROM matrix_devices d WHERE NOT EXISTS (
                    SELECT 1 FROM sessions s WHERE s.id = d.session_id AND s.body->>'level' = 'registered')
                LIMIT \(limit)
                """))
    }

    public func all(limit: Int) async throws -> [StoredMatrixDevice] {
        try devices(
            await database.query(
                "SELECT session_id, sub, user_id, device_id, access_token, created_at FROM matrix_devices ORDER BY created_at LIMIT \(limit)"))
    }

    public func delete(sessionID: String, deviceID: String) async throws {
        try await database.query("DELETE FROM matrix_devices WHERE session_id = \(sessionID) AND device_id = \(deviceID)")
    }

    func devices(_ rows: [PostgresRow]) throws -> [StoredMatrixDevice] {
        try rows.map { row in
            let (sessionID, sub, userID, deviceID, sealed, createdAt) = try PostgresDatabase.decoding {
                try row.decode((String, String, String, String, String, Date).self)
            }
            return StoredMatrixDevice(
                sessionID: sessionID, sub: sub, userID: userID, deviceID: deviceID,
                accessToken: try SealedColumn.matrixTokens.open(sealed, key: sessionID, with: keyring), createdAt: createdAt)
        }
    }
}
