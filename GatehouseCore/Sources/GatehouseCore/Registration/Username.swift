/// The rules for a chat username (documented in docs/upgrade-flow.md and on the username step):
/// 3 to 32 characters; ASCII letters, digits, `_` and `.`; starts with a letter; no `.` at the end or twice in a
/// row; not a reserved name; unique without regard to letter case.
public enum UsernameRules {
    public enum Problem: String, Error, Sendable, CaseIterable {
        case tooShort
        case tooLong
        case invalidCharacters
        case mustStartWithLetter
        case misplacedDot
        case reserved
        case taken
        /// The chat homeserver's own rules refuse the name.
        case refusedByChatService
        /// The chat homeserver could not be asked: nothing is wrong with the name, it cannot be had just now.
        case chatServiceUnavailable
    }

    public static let lengths = 3...32

    /// Names that would let a member pass for the organization or the system, compared without letter case.
    public static let reserved: Set<String> = [
        "abuse", "admin", "administrator", "all", "everyone", "gatehouse", "help", "here", "hostmaster", "info", "me", "moderator",
        "noreply", "null", "official", "operator", "postmaster", "root", "security", "signal", "staff", "support", "system",
        "undefined", "webmaster",
    ]

    /// The problem with `name` apart from whether somebody already has it, or `nil` when the rules allow it.
    /// `productName` (the chat product's configured name) is reserved as well.
    public static func problem(with name: String, productName: String = "") -> Problem? {
        if name.count < lengths.lowerBound { return .tooShort }
        if name.count > lengths.upperBound { return .tooLong }
        guard name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == ".") }) else { return .invalidCharacters }
        guard let first = name.first, first.isLetter else { return .mustStartWithLetter }
        if name.hasSuffix(".") || name.contains("..") { return .misplacedDot }
        let folded = name.lowercased()
        if reserved.contains(folded) || (!productName.isEmpty && folded == productName.lowercased()) { return .reserved }
        return nil
    }
}
