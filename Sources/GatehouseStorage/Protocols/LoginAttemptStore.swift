import Foundation
import GatehouseCore

public protocol LoginAttemptStore: Sendable {
    func insert(_ attempt: LoginAttempt) async throws
    /// Removes and returns the attempt: a `state` is good for one callback only.
    func take(state: String) async throws -> LoginAttempt?
    @discardableResult func deleteOlder(than cutoff: Date) async throws -> Int
}
