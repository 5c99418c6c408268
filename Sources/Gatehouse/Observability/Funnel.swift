import Foundation
import GatehouseCore
import GatehouseStorage

/// The upgrade funnel for operators (product §7): members at each step from sign-in to registration, the conversion
/// from each step to the next, and the other events of the window.
public struct FunnelReport: Sendable {
    public struct Step: Sendable, Equatable {
        public var event: EventName
        public var count: EventCount
        /// Members at this step per member at the step before; `nil` for the first step or an empty one before.
        public var conversion: Double?
    }

    /// The steps in order; a member may reach `registration_started` from the onboarding prompt without the banner.
    public static let steps: [EventName] = [
        .ssoLoginSuccess, .upgradeBannerShown, .upgradeBannerTapped, .registrationStarted, .registrationCompleted,
    ]

    public var window: DateInterval
    public var steps: [Step]
    public var otherEvents: [(EventName, EventCount)]
    public var provisioning: (waiting: Int, failed: Int)?

    public init(window: DateInterval, counts: [EventName: EventCount], provisioning: (waiting: Int, failed: Int)? = nil) {
        self.window = window
        var steps: [Step] = []
        for event in Self.steps {
            let count = counts[event] ?? EventCount(events: 0, members: 0)
            let previous = steps.last?.count.members ?? 0
            steps.append(
                Step(event: event, count: count, conversion: steps.isEmpty || previous == 0 ? nil : Double(count.members) / Double(previous)))
        }
        self.steps = steps
        self.otherEvents = EventName.allCases.filter { !Self.steps.contains($0) }.map { ($0, counts[$0] ?? EventCount(events: 0, members: 0)) }
        self.provisioning = provisioning
    }

    /// Registered members per signed-in member over the window.
    public var overallConversion: Double? {
        guard let first = steps.first?.count.members, first > 0, let last = steps.last?.count.members else { return nil }
        return Double(last) / Double(first)
    }

    public func json() -> [String: Any] {
        let formatter = ISO8601DateFormatter()
        var object: [String: Any] = [
            "from": formatter.string(from: window.start), "to": formatter.string(from: window.end),
            "steps": steps.map { step -> [String: Any] in
                var entry: [String: Any] = ["event": step.event.rawValue, "events": step.count.events, "members": step.count.members]
                entry["conversion_from_previous"] = step.conversion.map(Self.rounded) ?? NSNull()
                return entry
            },
            "overall_conversion": overallConversion.map(Self.rounded) ?? NSNull(),
            "other_events": Dictionary(
                uniqueKeysWithValues: otherEvents.map { ($0.0.rawValue, ["events": $0.1.events, "members": $0.1.members]) }),
        ]
        if let provisioning { object["provisioning"] = ["waiting": provisioning.waiting, "failed": provisioning.failed] }
        return object
    }

    /// A table for a terminal.
    public func text() -> String {
        let formatter = ISO8601DateFormatter()
        var lines = ["Upgrade funnel \(formatter.string(from: window.start)) – \(formatter.string(from: window.end))", ""]
        lines.append(Self.row("step", "members", "events", "from previous"))
        for step in steps {
            lines.append(Self.row(step.event.rawValue, "\(step.count.members)", "\(step.count.events)", step.conversion.map(Self.percent) ?? "–"))
        }
        lines.append("")
        lines.append("overall: " + (overallConversion.map(Self.percent) ?? "–") + " of signed-in members registered")
        lines.append("")
        lines.append(Self.row("other event", "members", "events", ""))
        for (event, count) in otherEvents { lines.append(Self.row(event.rawValue, "\(count.members)", "\(count.events)", "")) }
        if let provisioning {
            lines.append("")
            lines.append("provisioning webhook: \(provisioning.waiting) waiting, \(provisioning.failed) given up")
        }
        return lines.joined(separator: "\n")
    }

    static func rounded(_ value: Double) -> Double { (value * 10000).rounded() / 10000 }
    static func percent(_ value: Double) -> String { String(format: "%.1f%%", value * 100) }
    static func row(_ a: String, _ b: String, _ c: String, _ d: String) -> String {
        a.padding(toLength: 30, withPad: " ", startingAt: 0) + b.leftPadded(to: 8, with: " ") + c.leftPadded(to: 8, with: " ")
            + "  " + d
    }
}

/// The window of a funnel report: the last `days` days, or `since` (and `until`) as ISO 8601 dates or times.
public enum FunnelWindow {
    public static func parse(days: String?, since: String?, until: String?, now: Date = Date()) -> Result<DateInterval, FunnelWindowError> {
        if days != nil && (since != nil || until != nil) { return .failure(.init("give either days or since/until, not both")) }
        if let days {
            guard let count = Int(days), (1...3660).contains(count) else { return .failure(.init("days must be a whole number from 1 to 3660")) }
            return .success(DateInterval(start: now.addingTimeInterval(-Double(count) * 86400), end: now))
        }
        guard let since else { return .success(DateInterval(start: now.addingTimeInterval(-7 * 86400), end: now)) }
        guard let start = date(since) else { return .failure(.init("since is not an ISO 8601 date or time: \(since)")) }
        let end: Date
        if let until {
            guard let parsed = date(until) else { return .failure(.init("until is not an ISO 8601 date or time: \(until)")) }
            end = parsed
        } else {
            end = now
        }
        guard start < end else { return .failure(.init("since must be before until")) }
        return .success(DateInterval(start: start, end: end))
    }

    static func date(_ text: String) -> Date? {
        let full = ISO8601DateFormatter()
        if let date = full.date(from: text) { return date }
        let day = ISO8601DateFormatter()
        day.formatOptions = [.withFullDate]
        return day.date(from: text)
    }
}

public struct FunnelWindowError: Error, Equatable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
