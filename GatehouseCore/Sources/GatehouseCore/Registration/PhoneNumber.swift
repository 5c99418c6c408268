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

    /// A number read back from the store, which holds only what `parse` made; anything else is not a number.
    public static func stored(_ e164: String) -> PhoneNumber? {
        guard case .success(let number) = parse(e164), number.e164 == e164 else { return nil }
        return number
    }

    /// The number as people read it: the country code apart, then the national number grouped by its country's
    /// plan where that plan is fixed (the North American plan's `+1 555 010 0123`), and unbroken elsewhere
    /// (`+49 301234567`): an area code's length varies within most countries, and a grouping guessed in threes
    /// (`+49 301 234 567`) reads as a wrong number. Every digit is there.
    public var display: String {
        let digits = Array(e164.dropFirst())
        let codeLength = Self.countryCodeLength(digits)
        let code = String(digits[..<codeLength])
        let national = digits[codeLength...]
        if code == "1" && national.count == 10 {
            return "+1 \(String(national.prefix(3))) \(String(national.dropFirst(3).prefix(3))) \(String(national.suffix(4)))"
        }
        return national.isEmpty ? "+" + code : "+\(code) \(String(national))"
    }

    /// `display` isolated left to right (LRI … PDI) with no-break spaces, for a number set into a sentence: in
    /// right-to-left text it stays one number with the `+` in front, and no line breaks inside it on a narrow screen.
    public var displayInText: String { "\u{2066}" + display.replacingOccurrences(of: " ", with: "\u{00A0}") + "\u{2069}" }

    /// ITU-T E.164 country codes are prefix-free: 1 and 7 alone, these two-digit ones, and three digits otherwise.
    static func countryCodeLength(_ digits: [Character]) -> Int {
        guard let first = digits.first else { return 0 }
        if first == "1" || first == "7" { return 1 }
        let two = String(digits.prefix(2))
        return twoDigitCountryCodes.contains(two) ? 2 : min(3, digits.count)
    }

    static let twoDigitCountryCodes: Set = [
        "20", "27", "30", "31", "32", "33", "34", "36", "39", "40", "41", "43", "44", "45", "46", "47", "48", "49", "51", "52", "53", "54",
        "55", "56", "57", "58", "60", "61", "62", "63", "64", "65", "66", "81", "82", "84", "86", "90", "91", "92", "93", "94", "95", "98",
    ]
}

extension Character {
    var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
