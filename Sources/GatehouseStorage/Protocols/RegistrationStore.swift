import Foundation
import GatehouseCore

/// How writing a registration ended.
public enum RegisterOutcome: Sendable, Equatable {
    case registered
    /// Somebody else registered this username (in any letter case) first.
    case usernameTaken
    /// This member was registered already; nothing changed.
    case alreadyRegistered
}

/// A registration the provisioning webhook has not accepted yet.
public struct PendingProvisioning: Sendable, Equatable {
    public var registration: Registration
    public var attempts: Int
}

/// What a registered member chose in the upgrade flow and may see about themselves.
public struct RegisteredAccount: Sendable, Equatable {
    public var username: String
    /// Missing for registrations made before the flow asked for it.
    public var phoneNumber: PhoneNumber?
    /// The member's account on the chat homeserver, when a chat backend made (or found) it.
    public var chatUserID: String?
    /// Missing for accounts found on the homeserver rather than made by the flow.
    public var displayName: String?
    public var discoverability: Discoverability?

    public init(
        username: String, phoneNumber: PhoneNumber?, chatUserID: String? = nil, displayName: String? = nil, discoverability: Discoverability? = nil
    ) {
        self.username = username
        self.phoneNumber = phoneNumber
        self.chatUserID = chatUserID
        self.displayName = displayName
        self.discoverability = discoverability
    }
}

/// A member's registration as the operator console finds it.
public struct MemberRegistration: Sendable, Equatable {
    public var sub: String
    public var username: String
    public var chatUserID: String?
    public var registeredAt: Date

    public init(sub: String, username: String, chatUserID: String?, registeredAt: Date) {
        self.sub = sub
        self.username = username
        self.chatUserID = chatUserID
        self.registeredAt = registeredAt
    }
}

/// Registrations per SSO subject: whoever finished the upgrade flow is `registered` at every later sign-in.
public protocol RegistrationStore: Sendable {
    /// The username and phone number a registered member chose.
    func account(sub: String) async throws -> RegisteredAccount?
    /// Whether `username` (in any letter case) is registered, or claimed by another member than `sub` since
    /// `claimsSince`.
    func isUsernameTaken(_ username: String, for sub: String, claimsSince: Date) async throws -> Bool
    /// Claims `username` for `sub` while the member finishes the flow: unless it is registered, or another member's
    /// claim made since `claimsSince` holds it. One atomic step whatever the concurrency; the member's other claims
    /// are released. A registration, or the end of the member's flow, releases the claim.
    func claimUsername(_ username: String, for sub: String, at: Date, claimsSince: Date) async throws -> Bool
    /// Stores the registration, raises every live session of the member to `registered` and ends the flow, all in
    /// one statement: either all of it happens or none.
    func register(_ registration: Registration) async throws -> RegisterOutcome
    /// Records a chat account the member had before the upgrade (found on the homeserver at sign-in), as `register`
    /// does a finished flow: the member is `registered` from then on. Nothing is sent to the provisioning webhook.
    func registerExisting(sub: String, username: String, chatUserID: String, at: Date) async throws -> RegisterOutcome
    /// The PIN's bcrypt hash, when the member chose one in the flow.
    func pinHash(sub: String) async throws -> String?
    /// What the member changed on the account page (`nil`: unchanged).
    func updateAccount(sub: String, displayName: String?, discoverability: Discoverability?, phoneNumber: PhoneNumber?) async throws
    /// The registration whose subject, username (in any letter case) or Matrix ID is `text`.
    func lookup(_ text: String) async throws -> MemberRegistration?
    /// Every member with a chat account, their sealed profile opened, by username (the chat's directory searches them).
    func directoryEntries(limit: Int) async throws -> [DirectoryEntry]
    /// Removes the member's registration and lowers their live sessions to `sso` in one statement; whether there was one.
    func unregister(sub: String) async throws -> Bool

    /// Registrations still to be sent to the provisioning webhook whose next attempt is due.
    func dueForProvisioning(now: Date, maximumAttempts: Int, limit: Int) async throws -> [PendingProvisioning]
    func markProvisioned(sub: String, at: Date) async throws
    func markProvisioningFailed(sub: String, attempts: Int, nextAttemptAt: Date, error: String) async throws
    /// Registrations waiting for the webhook, and those it gave up on after `maximumAttempts`.
    func provisioningBacklog(maximumAttempts: Int) async throws -> (waiting: Int, failed: Int)
}

/// Why a code was not sent.
public enum CodeSendRefusal: Error, Sendable, Equatable {
    case memberLimit
    case phoneNumberLimit
}

/// Flows in progress, the record of codes sent (for the rate limits) and the code tries spent by each flow; all survive a
/// restart. Every counted step is one atomic operation in the store, whatever the concurrency: a store that cannot
/// promise that must not implement this protocol.
public protocol RegistrationFlowStore: Sendable {
    func flow(sub: String) async throws -> RegistrationFlow?
    func save(_ flow: RegistrationFlow) async throws
    /// Whether there was a flow to delete.
    @discardableResult func deleteFlow(sub: String) async throws -> Bool
    /// Records a code about to be sent, unless the member already had `perMember` codes since `since`, or the number
    /// `perPhoneNumber`; count and record are one atomic step. Returns the record's id, to release it if the send fails.
    func reserveCodeSend(
        sub: String, phoneNumber: PhoneNumber, at: Date, since: Date, perMember: Int, perPhoneNumber: Int
    ) async throws -> Result<Int, CodeSendRefusal>
    /// Forgets a reserved send that did not happen (the sender failed).
    func releaseCodeSend(id: Int) async throws
    /// Spends one of the flow `flowKey`'s code tries (`RegistrationFlow.attemptsKey`: every code the flow sends, resends
    /// included, draws on the same tries): its number (1 for the first), or `nil` when `maximum` are spent already.
    func claimCodeAttempt(flowKey: String, sub: String, maximum: Int, at: Date) async throws -> Int?
    /// Gives back one try of `flowKey` (a PIN that was right: only wrong ones stay counted).
    func refundCodeAttempt(flowKey: String) async throws
    /// Removes flows untouched since `flowsBefore`, send records and code tries older than `sendsBefore`; returns how many.
    @discardableResult func deleteStale(flowsBefore: Date, sendsBefore: Date) async throws -> Int
}
