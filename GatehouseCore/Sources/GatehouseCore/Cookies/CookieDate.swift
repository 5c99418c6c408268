import Foundation

/// The cookie-date algorithm of RFC 6265 §5.1.1: lenient about format, strict about values.
public enum CookieDate {
    static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    public static func parse(_ text: String) -> Date? {
        var time: (Int, Int, Int)?
        var day: Int?
        var month: Int?
        var year: Int?
        let tokens = text.split { character in
            guard let ascii = character.asciiValue else { return true }
            return ascii == 0x09 || (0x20...0x2F).contains(ascii) || (0x3B...0x40).contains(ascii)
                || (0x5B...0x60).contains(ascii) || (0x7B...0x7E).contains(ascii)
        }
        for token in tokens.map(String.init) {
            if time == nil, let parsed = parseTime(token) {
                time = parsed
            } else if day == nil, let value = leadingDigits(token, 1...2) {
                day = value
            } else if month == nil, token.count >= 3, let index = months.firstIndex(of: token.prefix(3).lowercased()) {
                month = index + 1
            } else if year == nil, let value = leadingDigits(token, 2...4) {
                year = value
            }
        }
        guard let (hour, minute, second) = time, let day, let month, var year else { return nil }
        if (70...99).contains(year) { year += 1900 } else if (0...69).contains(year) { year += 2000 }
        guard (1...31).contains(day), year >= 1601, hour <= 23, minute <= 59, second <= 59 else { return nil }
        var components = DateComponents()
        (components.year, components.month, components.day) = (year, month, day)
        (components.hour, components.minute, components.second) = (hour, minute, second)
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        guard let date = calendar.date(from: components), calendar.component(.day, from: date) == day else { return nil }
        return date
    }

    /// 1*digit, then anything but a digit.
    static func leadingDigits(_ token: String, _ count: ClosedRange<Int>) -> Int? {
        let digits = token.prefix { $0.isASCII && $0.isNumber }
        guard count.contains(digits.count) else { return nil }
        if let next = token.dropFirst(digits.count).first, next.isNumber { return nil }
        return Int(digits)
    }

    static func parseTime(_ token: String) -> (Int, Int, Int)? {
        let parts = token.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        let values = parts.enumerated().compactMap { index, part -> Int? in
            let text = index == 2 ? String(part.prefix { $0.isASCII && $0.isNumber }) : String(part)
            guard (1...2).contains(text.count), text.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
            return Int(text)
        }
        return values.count == 3 ? (values[0], values[1], values[2]) : nil
    }
}
