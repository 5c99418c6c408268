import Foundation
import GatehouseCore

/// What resealing needs of a backend: the values of a sealed column, and a change of one value made only if the row
/// still holds the value that was read (a member's request may write it meanwhile; that write is sealed already).
protocol SealedRowAccess: Sendable {
    func values(of column: SealedColumn) async throws -> [(key: String, value: String)]
    func replace(_ column: SealedColumn, key: String, old: String, new: String) async throws
}

/// What a reseal did: values stored before sealing existed and now sealed, values moved to the sealing key from an
/// older one, and values no kept key opens (their key was dropped too early: those rows stay as they are, and read as
/// missing — a member signs in again).
public struct ResealReport: Sendable, Equatable, CustomStringConvertible {
    public var sealed = 0
    public var rekeyed = 0
    public var unreadable = 0

    public var description: String { "\(sealed) value(s) sealed, \(rekeyed) moved to the sealing key, \(unreadable) unreadable" }
}

enum Resealing {
    /// Seals every clear secret and moves every value sealed with an older key to the sealing key.
    static func run(_ access: some SealedRowAccess, keyring: StorageKeyring) async throws -> ResealReport {
        var report = ResealReport()
        for column in SealedColumn.all {
            for (key, value) in try await access.values(of: column) {
                guard let new = resealed(value, key: key, column: column, keyring: keyring, report: &report) else { continue }
                try await access.replace(column, key: key, old: value, new: new)
            }
        }
        return report
    }

    /// The value sealed with the sealing key, or `nil` when it is already or cannot be.
    private static func resealed(
        _ value: String, key: String, column: SealedColumn, keyring: StorageKeyring, report: inout ResealReport
    ) -> String? {
        switch column.kind {
        case .lookupHash:
            guard !StorageKeyring.isLookupHash(value) else { return nil }
            report.sealed += 1
            return keyring.lookupHash(value)
        case .sealed:
            guard let keyID = StorageKeyring.keyID(of: value) else {
                report.sealed += 1
                return try? column.seal(value, key: key, with: keyring)
            }
            guard keyID != keyring.sealingKeyID else { return nil }
            guard let plaintext = try? column.open(value, key: key, with: keyring) else {
                report.unreadable += 1
                return nil
            }
            report.rekeyed += 1
            return try? column.seal(plaintext, key: key, with: keyring)
        case .sessionBody:
            guard let keyID = SessionRow.keyID(of: value) else {
                guard let session = try? RowCoding.decode(Session.self, text: value) else {
                    report.unreadable += 1
                    return nil
                }
                report.sealed += 1
                return try? SessionRow.encode(session, with: keyring)
            }
            guard keyID != keyring.sealingKeyID else { return nil }
            guard let session = try? SessionRow.decode(value, id: key, with: keyring) else {
                report.unreadable += 1
                return nil
            }
            report.rekeyed += 1
            return try? SessionRow.encode(session, with: keyring)
        }
    }
}

/// Which keys sealed a store's values, and how many of them the keys at hand do not open (a backup's key check).
enum SealedInventory {
    static func count(
        _ access: some SealedRowAccess, columns: [SealedColumn], keyring: StorageKeyring
    ) async throws -> (sealedBy: [String: Int], unreadable: Int) {
        var sealedBy: [String: Int] = [:]
        var unreadable = 0
        for column in columns where column.kind != .lookupHash {
            for (key, value) in try await access.values(of: column) {
                let keyID = column.kind == .sessionBody ? SessionRow.keyID(of: value) : StorageKeyring.keyID(of: value)
                guard let keyID else { continue }  // stored before sealing existed: the next start seals it
                sealedBy[keyID, default: 0] += 1
                let opens = column.kind == .sessionBody
                    ? (try? SessionRow.decode(value, id: key, with: keyring)) != nil
                    : (try? column.open(value, key: key, with: keyring)) != nil
                if !opens { unreadable += 1 }
            }
        }
        return (sealedBy, unreadable)
    }
}
