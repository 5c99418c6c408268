import Foundation
import GatehouseCore
import PostgresNIO

public struct PostgresAuditStore: AuditStore {
    let database: PostgresDatabase

    public init(database: PostgresDatabase) { self.database = database }

    public func append(_ records: [AuditRecord]) async throws {
        guard !records.isEmpty else { return }
        var bindings = PostgresBindings(capacity: records.count * 7)
        var rows: [String] = []
        for (index, record) in records.enumerated() {
            bindings.append(record.at)
            bindings.append(record.action.rawValue)
            for text in [record.member, record.app, record.path, record.reason, record.detail] {
                if let text { bindings.append(text) } else { bindings.appendNull() }
            }
            rows.append("(" + (1...7).map { "$\(index * 7 + $0)" }.joined(separator: ", ") + ")")
        }
        try await database.query(
            PostgresQuery(
                unsafeSQL: "INSERT INTO audit (at, action, member, app, path, reason, detail) VALUES " + rows.joined(separator: ", "),
                binds: bindings))
    }

    public func records(_ query: AuditQuery) async throws -> [AuditRecord] {
        var conditions: [String] = []
        var bindings = PostgresBindings()
        func bind(_ condition: (Int) -> String, _ value: some PostgresNonThrowingEncodable) {
            bindings.append(value)
            conditions.append(condition(bindings.count))
        }
        if let member = query.member { bind({ "member = $\($0)" }, member) }
        if let app = query.app { bind({ "app = $\($0)" }, app) }
        if let action = query.action { bind({ "action = $\($0)" }, action.rawValue) }
        if let window = query.window {
            bind({ "at >= $\($0)" }, window.start)
            bind({ "at < $\($0)" }, window.end)
        }
        bindings.append(query.limit)
        let filter = conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND ")
        let rows = try await database.query(
            PostgresQuery(
                unsafeSQL: "SELECT at, action, member, app, path, reason, detail FROM audit" + filter + " ORDER BY id DESC LIMIT $\(bindings.count)",
                binds: bindings))
        return try rows.compactMap { row in
            let (at, action, member, app, path, reason, detail) = try PostgresDatabase.decoding {
                try row.decode((Date, String, String?, String?, String?, String?, String?).self)
            }
            return AuditRecord.Action(rawValue: action).map {
                AuditRecord(action: $0, member: member, app: app, path: path, reason: reason, detail: detail, at: at)
            }
        }
    }

    public func removeRecords(before cutoff: Date) async throws -> Int {
        try await database.query("DELETE FROM audit WHERE at < \(cutoff) RETURNING id").count
    }
}
