import Crypto
import Foundation

/// The numbers behind verification codes (product §5), each with its default.
public struct VerificationRules: Sendable, Equatable {
    public var lifetime: TimeInterval
    public var resendAfter: TimeInterval
    public var maximumWrongTries: Int
    /// Codes one member may be sent within `rateWindow`.
    public var codesPerMember: Int
    /// Codes one phone number may be sent within `rateWindow`, whoever asks.
    public var codesPerPhoneNumber: Int
    public var rateWindow: TimeInterval

    public init(
        lifetime: TimeInterval = 600, resendAfter: TimeInterval = 60, maximumWrongTries: Int = 5, codesPerMember: Int = 3,
        codesPerPhoneNumber: Int = 3, rateWindow: TimeInterval = 3600
    ) {
        self.lifetime = lifetime
        self.resendAfter = resendAfter
        self.maximumWrongTries = maximumWrongTries
        self.codesPerMember = codesPerMember
        self.codesPerPhoneNumber = codesPerPhoneNumber
        self.rateWindow = rateWindow
    }

    /// The most codes anybody can check against one phone number within `rateWindow`, however many accounts and
    /// connections they use: every code sent to the number is counted, and every entry checked spends a try first.
    public var guessesPerPhoneNumberPerWindow: Int { codesPerPhoneNumber * maximumWrongTries }
    /// The same for one member, whatever numbers they type.
    public var guessesPerMemberPerWindow: Int { codesPerMember * maximumWrongTries }
}

/// What happened to an entered code.
public enum CodeCheck: Sendable, Equatable {
    case accepted
    case wrong(remainingTries: Int)
    /// The last allowed wrong try: the code is gone.
    case burned
    case expired
    /// Not six digits; does not count as a try.
    case malformed
}

/// A code that was sent and not yet used: only its salted SHA-256 is kept.
///
/// Six digits are a small space, so the hash keeps the code out of the database's plain text rather than making it
/// unguessable offline; what protects the code is its ten-minute life, the five tries and the rate limits. The tries
/// are not counted here but in the store, one atomic step per entry (`RegistrationFlowStore.claimCodeAttempt`).
public struct PendingCode: Sendable, Codable, Equatable {
    public var salt: String
    public var hash: String
    public var issuedAt: Date
    public var expiresAt: Date

    /// The store counts tries per code under this id: the random salt, never reused by another code.
    public var id: String { salt }

    /// A fresh code from the system's secure random source, and what is stored of it.
    public static func issue(now: Date, rules: VerificationRules) -> (code: String, pending: PendingCode) {
        var generator = SystemRandomNumberGenerator()
        let number = UInt32.random(in: 0..<1_000_000, using: &generator)
        let code = String(number).leftPadded(to: 6)
        return (code, issue(code: code, now: now, rules: rules))
    }

    static func issue(code: String, now: Date, rules: VerificationRules) -> PendingCode {
        let salt = RandomToken.make(bytes: 16)
        return PendingCode(
            salt: salt, hash: digest(code, salt: salt), issuedAt: now, expiresAt: now.addingTimeInterval(rules.lifetime))
    }

    static func digest(_ code: String, salt: String) -> String {
        SHA256.hash(data: Data((salt + ":" + code).utf8)).withUnsafeBytes { String(lowerHex: $0) }
    }

    /// Checks an entry. A well-formed entry for a live code first spends a try through `claimAttempt`, which answers
    /// the try's number (1, 2, …) or `nil` once the code has none left; only then is the entry compared. Parallel
    /// entries therefore never see the same count: at most `maximumWrongTries` entries are ever compared, the right
    /// code included, and after the last wrong one no code works.
    public func check(_ entry: String, now: Date, rules: VerificationRules, claimAttempt: () async throws -> Int?) async rethrows -> CodeCheck {
        let digits = entry.filter { !$0.isWhitespace }
        guard digits.count == 6, digits.allSatisfy(\.isASCIIDigit) else { return .malformed }
        guard now < expiresAt else { return .expired }
        guard let attempt = try await claimAttempt(), attempt <= rules.maximumWrongTries else { return .burned }
        if constantTimeEquals(Self.digest(digits, salt: salt), hash) { return .accepted }
        return attempt >= rules.maximumWrongTries ? .burned : .wrong(remainingTries: rules.maximumWrongTries - attempt)
    }

    /// When a new code may be asked for.
    public func resendAvailableAt(rules: VerificationRules) -> Date { issuedAt.addingTimeInterval(rules.resendAfter) }
}

extension String {
    public func leftPadded(to width: Int, with pad: Character = "0") -> String {
        count >= width ? self : String(repeating: pad, count: width - count) + self
    }
}
