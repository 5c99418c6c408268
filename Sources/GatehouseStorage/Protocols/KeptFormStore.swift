import Foundation
import GatehouseCore

/// Where forms wait for their member to sign in again (`KeptForm`): the body sealed, at most `KeptForm.perMember` per
/// member.
public protocol KeptFormStore: Sendable {
    /// Keeps `form`, dropping the member's oldest beyond `KeptForm.perMember`.
    func keep(_ form: KeptForm) async throws
    /// The member's form with this id, still good at `now`, left in place.
    func find(idHash: String, sub: String, now: Date) async throws -> KeptForm?
    /// The same, removed: a form is sent once, whichever replica is asked.
    func take(idHash: String, sub: String, now: Date) async throws -> KeptForm?
    @discardableResult func deleteExpired(now: Date) async throws -> Int
}
