import Foundation

/// The steps of the upgrade flow (product §5), in order; "done" is not a step but the registration itself.
public enum RegistrationStep: String, Sendable, Codable, CaseIterable, Comparable {
    case phone
    case code
    case username
    case pin
    case profile

    public var number: Int { Self.allCases.firstIndex(of: self)! + 1 }

    public static func < (lhs: RegistrationStep, rhs: RegistrationStep) -> Bool { lhs.number < rhs.number }
}

/// Who may find the member by phone number.
public enum Discoverability: String, Sendable, Codable, CaseIterable {
    case everybody
    case nobody
}

/// A step was asked for that the flow is not at.
public struct WrongStep: Error, Equatable {
    public let current: RegistrationStep
}

/// One member's upgrade in progress, stored per SSO subject so that it resumes after a restart or a new sign-in.
///
/// Every change is a method here that checks the step first; the flow only ever moves forward one step, or back
/// from the code to the phone number. Nothing here is the registration: that is written in one statement at the
/// end (`RegistrationStore.register`), so the member is either registered or not, never half.
public struct RegistrationFlow: Sendable, Codable, Equatable {
    public var sub: String
    public private(set) var step: RegistrationStep
    public var startedAt: Date
    public private(set) var updatedAt: Date
    /// Where the member lands when done: a checked gateway path.
    public var returnTo: String
    public private(set) var phoneNumber: PhoneNumber?
    public private(set) var code: PendingCode?
    public private(set) var username: String?
    /// bcrypt; the PIN itself is never stored or logged.
    public private(set) var pinHash: String?

    /// A flow untouched for longer than this starts over (product §5).
    public static let resumeWindow: TimeInterval = 30 * 60

    public init(sub: String, returnTo: String, now: Date) {
        self.sub = sub
        self.step = .phone
        self.startedAt = now
        self.updatedAt = now
        self.returnTo = returnTo
    }

    public func isStale(now: Date) -> Bool { now.timeIntervalSince(updatedAt) > Self.resumeWindow }

    /// A new flow after `stale` lapsed: from the first step again (the number is verified anew), with the number and
    /// the username the member had entered kept as the fields' first values, so that nothing typed is lost.
    public static func restart(after stale: RegistrationFlow, returnTo: String, now: Date) -> RegistrationFlow {
        var flow = RegistrationFlow(sub: stale.sub, returnTo: returnTo, now: now)
        flow.phoneNumber = stale.phoneNumber
        flow.username = stale.username
        return flow
    }

    /// What the flow's code tries are counted on: the flow, not the code, so that a resent code brings no new tries
    /// (five wrong entries end the flow however many codes it sent). A flow started again is a new key.
    public var attemptsKey: String {
        "flow:" + TokenHash.hex("\(sub)|\(startedAt.timeIntervalSince1970)")
    }

    /// The phone step is open again while the member waits for a code (a typo in the number).
    public func allows(_ requested: RegistrationStep) -> Bool {
        requested == step || (requested == .phone && step == .code)
    }

    func require(_ requested: RegistrationStep) throws(WrongStep) {
        guard allows(requested) else { throw WrongStep(current: step) }
    }

    /// A code went to `phoneNumber`; any earlier code no longer works.
    public mutating func codeSent(to phoneNumber: PhoneNumber, code: PendingCode, now: Date) throws(WrongStep) {
        try require(.phone)
        self.phoneNumber = phoneNumber
        self.code = code
        step = .code
        updatedAt = now
    }

    /// Checks an entered code (tries are spent through `claimAttempt`, see `PendingCode.check`). Accepted moves on and
    /// forgets the code, so it never works twice; burned forgets it; anything else changes nothing, so a wrong entry
    /// needs no write that could race with a right one.
    public mutating func verify(
        _ entry: String, now: Date, rules: VerificationRules, claimAttempt: (PendingCode) async throws -> Int?
    ) async throws -> CodeCheck {
        guard step == .code else { throw WrongStep(current: step) }
        guard let pending = code else { return .expired }
        let result = try await pending.check(entry, now: now, rules: rules) { try await claimAttempt(pending) }
        switch result {
        case .accepted:
            code = nil
            step = .username
            updatedAt = now
        case .burned:
            code = nil
            updatedAt = now
        case .wrong, .expired, .malformed:
            break
        }
        return result
    }

    public mutating func chooseUsername(_ name: String, now: Date) throws(WrongStep) {
        try require(.username)
        username = name
        step = .pin
        updatedAt = now
    }

    public mutating func setPIN(hash: String, now: Date) throws(WrongStep) {
        try require(.pin)
        pinHash = hash
        step = .profile
        updatedAt = now
    }

    /// Sends the member back to choose another name (taken by somebody else in the meantime).
    public mutating func usernameTaken(now: Date) {
        guard step >= .username else { return }
        username = nil
        step = .username
        updatedAt = now
    }

    /// The registration this flow ends in, once the profile is given.
    public func registration(displayName: String, discoverability: Discoverability, now: Date) throws(WrongStep) -> Registration {
        try require(.profile)
        guard let phoneNumber, let username, let pinHash else { throw WrongStep(current: step) }
        return Registration(
            sub: sub, username: username, phoneNumber: phoneNumber, displayName: displayName, discoverability: discoverability,
            pinHash: pinHash, registeredAt: now)
    }
}

/// A finished upgrade: what is stored per SSO subject and what the provisioning webhook receives (without the PIN).
public struct Registration: Sendable, Equatable {
    public var sub: String
    public var username: String
    public var phoneNumber: PhoneNumber
    public var displayName: String
    public var discoverability: Discoverability
    public var pinHash: String
    public var registeredAt: Date
    /// The member's account on the chat homeserver (`@alice:chat.example`), when a chat backend made it.
    public var chatUserID: String?

    public init(
        sub: String, username: String, phoneNumber: PhoneNumber, displayName: String, discoverability: Discoverability, pinHash: String,
        registeredAt: Date, chatUserID: String? = nil
    ) {
        self.chatUserID = chatUserID
        self.sub = sub
        self.username = username
        self.phoneNumber = phoneNumber
        self.displayName = displayName
        self.discoverability = discoverability
        self.pinHash = pinHash
        self.registeredAt = registeredAt
    }
}
