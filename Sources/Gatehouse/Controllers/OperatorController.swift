import Foundation
import GatehouseCore
import GatehouseStorage
import Hummingbird

/// The operator console (`/operator`, members with `operator.role`): the funnel per day as a chart drawn here (SVG)
/// with its data table, live sessions and members by level, each app's health, and the recent refusals of the audit
/// trail (every replica's, with member, app and path). Every view has a JSON twin: `/operator/funnel` (the report over
/// a window, as before), `/operator/funnel/days`, `/operator/sessions`, `/operator/apps`, `/operator/refusals`. A member
/// without the role gets the "not allowed" page (or JSON) and no data.
struct OperatorController: Sendable {
    let funnel: FunnelController
    let events: any EventStore
    let sessions: any SessionStore
    let metrics: GatewayMetrics
    /// The audit trail, whose refusals the console lists.
    let audit: OperatorAuditController
    let renderer: PageRenderer
    let configuration: GatehouseConfiguration

    /// The funnel's days, newest last: the steps the console draws, with `registration_failed` beside them.
    static let dailySteps: [EventName] = FunnelReport.steps + [.registrationFailed]
    static let days = 7

    func addRoutes(to group: RouterGroup<SignedInRequestContext>) {
        group.get(RouterPath(stringLiteral: Paths.operatorPrefix), use: { _, _ in try await console() })
        group.get(RouterPath(stringLiteral: Paths.operatorFunnel + "/days"), use: { _, _ in try JSONResponse.make(try await days().json) })
        group.get(RouterPath(stringLiteral: Paths.operatorPrefix + "/sessions"), use: { _, _ in try JSONResponse.make(try await levels()) })
        group.get(RouterPath(stringLiteral: Paths.operatorPrefix + "/apps"), use: { _, _ in try JSONResponse.make(apps().map(\.json)) })
        group.get(RouterPath(stringLiteral: Paths.operatorPrefix + "/refusals"), use: { _, _ in try JSONResponse.make(try await recentRefusals().map(OperatorAuditController.json)) })
        group.get(
            RouterPath(stringLiteral: Paths.operatorPrefix + "/network-changes"), use: { _, _ in try JSONResponse.make(try await networkChanges().map(Self.json)) })
    }

    /// Members per step and UTC day over the last `days` days, with each day's conversion from sign-in to registration.
    struct Days {
        let days: [(day: Date, members: [EventName: Int])]

        var json: [[String: Any]] {
            days.map { day in
                var object: [String: Any] = ["day": Self.dayText(day.day)]
                for step in OperatorController.dailySteps { object[step.rawValue] = day.members[step] ?? 0 }
                object["conversion"] = conversion(day.members) as Any
                return object
            }
        }

        func conversion(_ members: [EventName: Int]) -> Double? {
            let signIns = members[.ssoLoginSuccess] ?? 0
            return signIns == 0 ? nil : Double(members[.registrationCompleted] ?? 0) / Double(signIns)
        }

        static func dayText(_ day: Date) -> String {
            day.formatted(Date.ISO8601FormatStyle(timeZone: TimeZone(identifier: "UTC")!).year().month().day())
        }
    }

    func days(now: Date = Date()) async throws -> Days {
        await funnel.queue?.flush()
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let today = calendar.startOfDay(for: now)
        var result: [(Date, [EventName: Int])] = []
        for back in (0..<Self.days).reversed() {
            let start = calendar.date(byAdding: .day, value: -back, to: today)!
            let counts = try await events.counts(in: DateInterval(start: start, duration: 86_400))
            result.append((start, Dictionary(uniqueKeysWithValues: Self.dailySteps.map { ($0, counts[$0]?.members ?? 0) })))
        }
        return Days(days: result)
    }

    func levels() async throws -> [String: Any] {
        let now = Date()
        let levels = try await sessions.levels(now: now, idleCutoff: now.addingTimeInterval(-TimeInterval(configuration.session.idleTimeoutSeconds)))
        return [
            "sessions": levels.values.reduce(0) { $0 + $1.sessions },
            "levels": Dictionary(
                uniqueKeysWithValues: [AuthLevel.sso, .registered].map { level in
                    (level.rawValue, ["sessions": levels[level.rawValue]?.sessions ?? 0, "members": levels[level.rawValue]?.members ?? 0])
                }),
        ]
    }

    func apps() -> [AppHealth] {
        AppHealth.of(configuration.apps, exposition: metrics.exposition())
    }

    /// The newest refusals of the audit trail.
    func recentRefusals() async throws -> [AuditRecord] {
        try await audit.records(AuditQuery(action: .refused, limit: 20))
    }

    func console() async throws -> Response {
        let days = try await days()
        let levels = try await levels()
        let strings = renderer.strings
        let steps = Self.dailySteps.enumerated().map { index, step in
            ["name": strings["operator_step_\(step.rawValue)"], "series": index] as [String: Any]
        }
        let rows = days.days.map { day -> [String: Any] in
            [
                "day": Days.dayText(day.day), "cells": Self.dailySteps.map { day.members[$0] ?? 0 },
                "conversion": days.conversion(day.members).map { String(format: "%.0f %%", $0 * 100) } ?? "–",
            ]
        }
        let level = levels["levels"] as? [String: [String: Int]] ?? [:]
        var values: [String: Any] = [
            "chart": FunnelChart(days: days, title: strings["operator_funnel_title"]).svg, "steps": steps, "rows": rows,
            "sessions": levels["sessions"] ?? 0, "sso": level["sso"] ?? [:], "registered": level["registered"] ?? [:],
            "apps": apps().map(\.page), "nav": OperatorNavigation.items(current: .overview, strings: strings),
        ]
        let refusals = try await recentRefusals()
        values["refusals"] = try await audit.rows(refusals, strings: strings)
        values["hasRefusals"] = !refusals.isEmpty
        let changes = try await networkChanges()
        let names = try await ConsoleMemberNames.load(changes.map(\.sub), from: audit.members)
        values["networkChanges"] = changes.map { event in
            names.adding(to: Self.json(event).merging(["shown": OperatorAuditController.shownTime(event.at)]) { own, _ in own }, subject: event.sub)
        }
        values["hasNetworkChanges"] = !changes.isEmpty
        return try renderer.page("operator", title: strings["operator_title"], values)
    }
}

extension OperatorController {
    /// Sessions used from a second network within minutes of the first (`session_network_changed`), newest first:
    /// when, whose, and whether the session was flagged or ended (`session.bind_to_network`).
    func networkChanges() async throws -> [GatewayEvent] {
        await funnel.queue?.flush()
        return try await events.latest(.sessionNetworkChanged, limit: 50)
    }

    /// A network change as its JSON twin gives it.
    static func json(_ event: GatewayEvent) -> [String: String] {
        ["at": event.at.formatted(.iso8601), "sub": event.sub ?? "", "outcome": event.detail ?? ""]
    }
}

extension AppHealth {
    var json: [String: Any] {
        ["slug": slug, "name": name, "requests": requests, "failures": failures, "p50_seconds": p50Seconds as Any, "p99_seconds": p99Seconds as Any]
    }

    /// As the console's table shows it: failures by kind in one cell, times as "at most" a bucket's bound.
    var page: [String: Any] {
        func time(_ seconds: Double?) -> String {
            guard let seconds else { return "–" }
            return seconds.isInfinite ? "> 30 s" : "≤ \(Int((seconds * 1000).rounded())) ms"
        }
        let failed = failures.filter { $0.value > 0 }.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
        return [
            "name": name, "requests": requests, "failures": failed.isEmpty ? "0" : failed.joined(separator: ", "), "p50": time(p50Seconds),
            "p99": time(p99Seconds),
        ]
    }
}

/// The funnel per day as grouped bars, drawn on the server: one group per day, one bar per step, each bar titled
/// with its figure (the table beside it carries the same figures for screen readers).
struct FunnelChart {
    let days: OperatorController.Days
    let title: String

    var svg: String {
        let width = 640.0, height = 220.0, top = 10.0, bottom = 24.0
        let steps = OperatorController.dailySteps
        let highest = max(1, days.days.flatMap { $0.members.values }.max() ?? 1)
        let group = width / Double(max(days.days.count, 1))
        let bar = (group - 12) / Double(steps.count)
        var shapes = ""
        for (dayIndex, day) in days.days.enumerated() {
            let x0 = Double(dayIndex) * group + 6
            for (index, step) in steps.enumerated() {
                let value = day.members[step] ?? 0
                let barHeight = (height - top - bottom) * Double(value) / Double(highest)
                let y = height - bottom - barHeight
                shapes +=
                    #"<rect class="series-\#(index)" x="\#(x0 + Double(index) * bar)" y="\#(y)" width="\#(bar - 1)" height="\#(barHeight)"><title>\#(OperatorController.Days.dayText(day.day)) \#(step.rawValue): \#(value)</title></rect>"#
            }
            shapes +=
                #"<text x="\#(x0 + (group - 12) / 2)" y="\#(height - 6)" text-anchor="middle">\#(OperatorController.Days.dayText(day.day).suffix(5))</text>"#
        }
        return
            #"<svg id="funnel-chart" viewBox="0 0 \#(Int(width)) \#(Int(height))" role="img" aria-labelledby="funnel-chart-title"><title id="funnel-chart-title">\#(title)</title>\#(shapes)</svg>"#
    }
}
