import Foundation
import GatehouseStorage
import Testing

@testable import Gatehouse

/// The funnel report and its windows, computed from event counts.
@Suite struct FunnelTests {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)

    @Test func theFunnelCountsMembersAndConversion() throws {
        let window = DateInterval(start: Self.start, duration: 86400)
        let report = FunnelReport(
            window: window,
            counts: [
                .ssoLoginSuccess: EventCount(events: 12, members: 10), .upgradeBannerShown: EventCount(events: 40, members: 8),
                .upgradeBannerTapped: EventCount(events: 5, members: 4), .registrationStarted: EventCount(events: 4, members: 4),
                .registrationCompleted: EventCount(events: 2, members: 2), .registrationFailed: EventCount(events: 1, members: 1),
            ])
        #expect(report.steps.map(\.event) == FunnelReport.steps)
        #expect(report.steps.map(\.conversion) == [nil, 0.8, 0.5, 1.0, 0.5])
        #expect(report.overallConversion == 0.2)
        let json = report.json()
        let steps = try #require(json["steps"] as? [[String: Any]])
        #expect(steps.last?["members"] as? Int == 2)
        #expect((json["other_events"] as? [String: [String: Int]])?["registration_failed"]?["events"] == 1)
        #expect(report.text().contains("registration_completed"))
    }

    @Test func funnelWindows() throws {
        let now = Self.start
        #expect(
            try FunnelWindow.parse(days: "3", since: nil, until: nil, now: now).get()
                == DateInterval(start: now.addingTimeInterval(-3 * 86400), end: now))
        #expect(try FunnelWindow.parse(days: nil, since: "2026-11-01", until: "2026-11-02T12:00:00Z", now: now).get().duration == 36 * 3600)
        for (days, since, until) in [
            ("0", nil, nil), ("x", nil, nil), ("3", "2026-11-01", nil), (nil, "yesterday", nil), (nil, "2026-11-02", "2026-11-01"),
        ] {
            #expect(throws: FunnelWindowError.self) { try FunnelWindow.parse(days: days, since: since, until: until, now: now).get() }
        }
    }
}
