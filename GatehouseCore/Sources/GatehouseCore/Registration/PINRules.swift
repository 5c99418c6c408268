/// The PIN of the upgrade flow: 4 to 12 digits, not one digit repeated and not a straight run (`1234`, `9876`).
public enum PINRules {
    public enum Problem: String, Error, Sendable, CaseIterable {
        case notDigits
        case tooShort
        case tooLong
        case tooSimple
        case mismatch
    }

    public static let lengths = 4...12

    public static func problem(pin: String, confirmation: String) -> Problem? {
        guard pin.allSatisfy(\.isASCIIDigit) else { return .notDigits }
        if pin.count < lengths.lowerBound { return .tooShort }
        if pin.count > lengths.upperBound { return .tooLong }
        let digits = pin.compactMap(\.wholeNumberValue)
        let steps = Set(zip(digits, digits.dropFirst()).map { $1 - $0 })
        if steps.count == 1, let step = steps.first, abs(step) <= 1 { return .tooSimple }
        if pin != confirmation { return .mismatch }
        return nil
    }
}
