import Foundation
import GatehouseCore

/// The audit trail's records (`AuditRecord`), kept for `audit.retention_days`.
public protocol AuditStore: Sendable {
    /// Stores `records` in one statement (all or none).
    func append(_ records: [AuditRecord]) async throws
    /// The records `query` asks for, newest first.
    func records(_ query: AuditQuery) async throws -> [AuditRecord]
    /// Removes the records from before `cutoff`; how many.
    @discardableResult
    func removeRecords(before cutoff: Date) async throws -> Int
}
