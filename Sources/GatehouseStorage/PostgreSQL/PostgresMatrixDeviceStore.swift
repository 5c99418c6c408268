import Foundation
import PostgresNIO

public struct PostgresMatrixDeviceStore: MatrixDeviceStore {
    let database: PostgresDatabase
    let keyring: StorageKeyring

    public init(database: PostgresDatabase, keyring: StorageKeyring) {
        self.database = database
        self.keyring = keyring
    }

    static let columns = "session_id, sub, user_id, device_id, access_token, created_at, push"

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
                "SELECT \(unescaped: Self.columns) FROM matrix_devices WHERE session_id = \(sessionID)")
        ).first
    }

    public func ending(limit: Int) async throws -> [StoredMatrixDevice] {
        try devices(
            await database.query(
                """
                SELECT \(unescaped: Self.columns) FROM matrix_devices d WHERE NOT EXISTS (
                    SELECT 1 FROM sessions s WHERE s.id = d.session_id AND s.body->>'level' = 'registered')
                LIMIT \(limit)
                """))
    }

    public func all(limit: Int) async throws -> [StoredMatrixDevice] {
        try devices(
            await database.query(
                "SELECT \(unescaped: Self.columns) FROM matrix_devices ORDER BY created_at LIMIT \(limit)"))
    }

    public func delete(sessionID: String, deviceID: String) async throws {
        try await database.query("DELETE FROM matrix_devices WHERE session_id = \(sessionID) AND device_id = \(deviceID)")
    }

    public func setPush(sessionID: String, deviceID: String, _ push: StoredPush?) async throws -> Bool {
        let sealed = try push.map { try SealedColumn.pushSubscriptions.seal($0, key: sessionID, with: keyring) }
        return try await !database.query(
            """
            UPDATE matrix_devices SET push_key = \(push?.keyHash), push = \(sealed)
            WHERE session_id = \(sessionID) AND device_id = \(deviceID) RETURNING session_id
            """
        ).isEmpty
    }

    public func device(pushKeyHash: String) async throws -> StoredMatrixDevice? {
        try devices(await database.query("SELECT \(unescaped: Self.columns) FROM matrix_devices WHERE push_key = \(pushKeyHash)")).first
    }

    func devices(_ rows: [PostgresRow]) throws -> [StoredMatrixDevice] {
        try rows.map { row in
            let (sessionID, sub, userID, deviceID, sealed, createdAt, push) = try PostgresDatabase.decoding {
                try row.decode((String, String, String, String, String, Date, String?).self)
            }
            return StoredMatrixDevice(
                sessionID: sessionID, sub: sub, userID: userID, deviceID: deviceID,
                accessToken: try SealedColumn.matrixTokens.open(sealed, key: sessionID, with: keyring), createdAt: createdAt,
                push: try push.map { try SealedColumn.pushSubscriptions.open(StoredPush.self, $0, key: sessionID, with: keyring) })
        }
    }
}
