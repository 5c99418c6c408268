import Foundation
import GatehouseStorage

/// The `Date` field of answers the gateway writes itself (RFC 9110 §6.6.1), formatted once per second by each thread
/// that writes answers (no lock shared by the event loops).
final class HTTPDate: Sendable {
    private let current = ThreadMemo<Bool, (second: Int, text: String)>(limit: 1)

    var now: String {
        let second = Int(Date().timeIntervalSince1970)
        if let current = current[true], current.second == second { return current.text }
        let text = Self.format(Date(timeIntervalSince1970: TimeInterval(second)))
        current.remember((second, text), for: true)
        return text
    }

    static func format(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }
}
