/// A phone number in E.164 form (`+` and 7 to 15 digits, no leading zero), as the upgrade flow stores it.
public struct PhoneNumber: Sendable, Equatable, Hashable, Codable, CustomStringConvertible {
    public enum Problem: String, Error, Sendable, CaseIterable {
        case empty
        /// No `+` and country code in front.
        case missingCountryCode
        case invalidCharacters
        case wrongLength
    }

    public let e164: String

    public var description: String { e164 }

    /// Accepts what people type (spaces, dashes, dots and parentheses between the digits) and keeps the digits.
    public static func parse(_ input: String) -> Result<PhoneNumber, Problem> {
        let trimmed = input.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { return .failure(.empty) }
        let compact = trimmed.filter { !" -.()\u{00A0}".contains($0) }
        guard compact.first == "+" else {
            return .failure(compact.allSatisfy(\.isASCIIDigit) ? .missingCountryCode : .invalidCharacters)
        }
        let digits = compact.dropFirst()
        guard digits.allSatisfy(\.isASCIIDigit) else { return .failure(.invalidCharacters) }
        guard (7...15).contains(digits.count), digits.first != "0" else { return .failure(.wrongLength) }
        return .success(PhoneNumber(e164: "+" + digits))
    }
}

extension Character {
    var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
