import Crypto
import Foundation

/// The numbers behind verification codes (SPEC §5), each with its default.
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
        lifetime: TimeInterval = 600, resendAfter: TimeInterval = 60, maximumWrongTries: Int = 5, codesPerMember: Int = 5,
        codesPerPhoneNumber: Int = 5, rateWindow: TimeInterval = 3600
    ) {
        self.lifetime = lifetime
        self.resendAfter = resendAfter
        self.maximumWrongTries = maximumWrongTries
        self.codesPerMember = codesPerMember
        self.codesPerPhoneNumber = codesPerPhoneNumber
        self.rateWindow = rateWindow
    }
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
/// unguessable offline; what protects the code is its ten-minute life, the five tries and the rate limits.
public struct PendingCode: Sendable, Codable, Equatable {
    public var salt: String
    public var hash: String
    public var issuedAt: Date
    public var expiresAt: Date
    public var wrongTries: Int

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
            salt: salt, hash: digest(code, salt: salt), issuedAt: now, expiresAt: now.addingTimeInterval(rules.lifetime), wrongTries: 0)
    }

    static func digest(_ code: String, salt: String) -> String {
        SHA256.hash(data: Data((salt + ":" + code).utf8)).map { String($0, radix: 16).leftPadded(to: 2) }.joined()
    }

    /// Checks an entry and counts a wrong try; the caller drops the code on `.accepted` and `.burned`.
    public mutating func check(_ entry: String, now: Date, rules: VerificationRules) -> CodeCheck {
        let digits = entry.filter { !$0.isWhitespace }
        guard digits.count == 6, digits.allSatisfy(\.isASCIIDigit) else { return .malformed }
        guard now < expiresAt else { return .expired }
        if constantTimeEquals(Self.digest(digits, salt: salt), hash) { return .accepted }
        wrongTries += 1
        return wrongTries >= rules.maximumWrongTries ? .burned : .wrong(remainingTries: rules.maximumWrongTries - wrongTries)
    }

    /// When a new code may be asked for.
    public func resendAvailableAt(rules: VerificationRules) -> Date { issuedAt.addingTimeInterval(rules.resendAfter) }
}

extension String {
    func leftPadded(to width: Int, with pad: Character = "0") -> String {
        count >= width ? self : String(repeating: pad, count: width - count) + self
    }
}
