import Foundation
import GatehouseCore
import GatehouseStorage

/// The member's upgrade PIN compared with the one they chose, under the budget wrong codes have:
/// `maximumWrongTries` within the rate window, after which no PIN is compared until it ends. Used wherever the PIN
/// confirms something (the account page's changes, a path that asks for it).
struct PINGuard: Sendable {
    let flows: any RegistrationFlowStore
    let registrations: any RegistrationStore
    let hasher: PINHasher
    let rules: VerificationRules
    let now: @Sendable () -> Date

    /// What a PIN entry came to.
    enum Check: Equatable {
        case right
        case wrong(remaining: Int)
        /// No PIN is compared until the window ends.
        case locked
        /// The member has no PIN (registered before PINs, or not registered).
        case noPIN
    }

    /// Spends a try first (parallel guesses never share one), compares, and gives the try back when the PIN was
    /// right: only wrong PINs stay counted. The bcrypt comparison runs once per entry, never per request.
    func check(_ pin: String, sub: String) async throws -> Check {
        guard let hash = try await registrations.pinHash(sub: sub) else { return .noPIN }
        let window = Int(now().timeIntervalSince1970 / rules.rateWindow)
        let key = "pin:" + TokenHash.hex("\(sub)|\(window)")
        guard let spent = try await flows.claimCodeAttempt(flowKey: key, sub: sub, maximum: rules.maximumWrongTries, at: now()) else {
            return .locked
        }
        guard try await hasher.verify(pin, hash: hash) else { return .wrong(remaining: rules.maximumWrongTries - spent) }
        try await flows.refundCodeAttempt(flowKey: key)
        return .right
    }
}
