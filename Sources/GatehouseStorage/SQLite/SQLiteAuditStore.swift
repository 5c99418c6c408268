import Foundation
import GatehouseCore
import SQLiteNIO

public struct SQLiteAuditStore: AuditStore {
    let database: SQLiteDatabase

    public init(database: SQLiteDatabase) { self.database = database }

    public func append(_ records: [AuditRecord]) async throws {
        guard !records.isEmpty else { return }
        try await database.query(
            "INSERT INTO audit (at, action, member, app, path, reason, detail) VALUES "
                + Array(repeating: "(?, ?, ?, ?, ?, ?, ?)", count: records.count).joined(separator: ", "),
            records.flatMap { record in
                [
                    .time(record.at), .text(record.action.rawValue), .text(record.member), .text(record.app), .text(record.path),
                    .text(record.reason), .text(record.detail),
                ]
            })
    }

    public func records(_ query: AuditQuery) async throws -> [AuditRecord] {
        var conditions: [String] = []
        var binds: [SQLiteData] = []
        if let member = query.member {
            conditions.append("member = ?")
            binds.append(.text(member))
        }
        if let app = query.app {
            conditions.append("app = ?")
            binds.append(.text(app))
        }
        if let action = query.action {
            conditions.append("action = ?")
            binds.append(.text(action.rawValue))
        }
        if let window = query.window {
            conditions.append("at >= ? AND at < ?")
            binds += [.time(window.start), .time(window.end)]
        }
        let filter = conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND ")
        return try await database.query(
            "SELECT at, action, member, app, path, reason, detail FROM audit" + filter + " ORDER BY id DESC LIMIT ?",
            binds + [.integer(query.limit)]
        ).compactMap { row in
            guard let action = row.column("action")?.string.flatMap(AuditRecord.Action.init(rawValue:)) else { return nil }
            return AuditRecord(
                action: action, member: row.column("member")?.string, app: row.column("app")?.string, path: row.column("path")?.string,
                reason: row.column("reason")?.string, detail: row.column("detail")?.string,
                at: Date(timeIntervalSince1970: row.column("at")?.double ?? 0))
        }
    }

    public func removeRecords(before cutoff: Date) async throws -> Int {
        try await database.query("DELETE FROM audit WHERE at < ? RETURNING id", [.time(cutoff)]).count
    }
}
