import Foundation
import NIOConcurrencyHelpers

/// The `Date` field of answers the gateway writes itself (RFC 9110 §6.6.1), formatted once per second.
final class HTTPDate: Sendable {
    private let current = NIOLockedValueBox<(second: Int, text: String)>((0, ""))

    var now: String {
        let second = Int(Date().timeIntervalSince1970)
        return current.withLockedValue { current in
            if current.second != second { current = (second, Self.format(Date(timeIntervalSince1970: TimeInterval(second)))) }
            return current.text
        }
    }

    static func format(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }
}
