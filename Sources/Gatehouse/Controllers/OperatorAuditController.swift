import Foundation
import GatehouseCore
import GatehouseStorage
import Hummingbird

/// The console's audit trail (`/operator/audit`, members with `operator.role`): the records of the store, newest
/// first, filtered by member, app, action and UTC day (`?member=&app=&action=&day=2026-11-27`), each in the member's
/// language with the stable codes beside it; JSON for API callers (`Accept: application/json`). The console's
/// "Recent refusals" are its last refusals (`recentRefusals`).
struct OperatorAuditController: Sendable {
    let audit: any AuditStore
    /// Who the records' members are.
    let members: any MemberStore
    /// What waits for the store: written before a read, so the operator sees what just happened on this replica.
    let queue: WriteQueue<AuditRecord>
    let renderer: PageRenderer
    let configuration: GatehouseConfiguration

    static let limit = 200

    func addRoutes(to group: RouterGroup<SignedInRequestContext>) {
        group.get(RouterPath(stringLiteral: Paths.operatorAudit)) { request, _ in try await page(request) }
    }

    /// A filter that cannot be read: its field, and the strings' key of what to do instead.
    struct FilterProblem: Error {
        let field: String
        let key: String
    }

    /// The query's filters, or the first that cannot be read.
    static func query(_ request: Request) throws(FilterProblem) -> AuditQuery {
        let parameters = request.uri.queryParameters
        func text(_ name: String) -> String? {
            parameters.get(name).map { String($0.trimmingCharacters(in: .whitespaces).prefix(300)) }.flatMap { $0.isEmpty ? nil : $0 }
        }
        var query = AuditQuery(member: text("member"), app: text("app"), limit: limit)
        if let action = text("action") {
            guard let known = AuditRecord.Action(rawValue: action) else { throw FilterProblem(field: "action", key: "operator_audit_bad_action") }
            query.action = known
        }
        if let day = text("day") {
            guard let date = try? Date(day + "T00:00:00Z", strategy: .iso8601) else { throw FilterProblem(field: "day", key: "operator_audit_bad_day") }
            query.day = date
        }
        return query
    }

    func records(_ query: AuditQuery) async throws -> [AuditRecord] {
        await queue.flush()
        return try await audit.records(query)
    }

    /// The records the filters ask for; a filter that cannot be read is a `400` that says which and why (the form
    /// again for a browser, with nothing listed).
    func page(_ request: Request) async throws -> Response {
        let strings = renderer.strings
        let wantsJSON = ErrorAnswer.wantsJSON(accept: request.headers[.accept])
        let query: AuditQuery
        var problem: String?
        do {
            query = try Self.query(request)
        } catch {
            if wantsJSON {
                return ErrorAnswer.json(
                    status: .badRequest, reason: "invalid_filter", message: strings[error.key], requestID: nil, extra: ["field": error.field]
                ).response
            }
            problem = strings[error.key]
            query = AuditQuery(limit: 0)
        }
        let found = problem == nil ? try await records(query) : []
        if wantsJSON { return try JSONResponse.make(found.map(Self.json)) }
        var values: [String: Any] = [
            "records": try await rows(found, strings: strings), "hasRecords": !found.isEmpty,
            "member": query.member ?? "", "app": query.app ?? "", "day": query.window.map { OperatorController.Days.dayText($0.start) } ?? "",
            "actions": AuditRecord.Action.allCases.map { action in
                ["value": action.rawValue, "label": strings["audit_action_\(action.rawValue)"], "selected": action == query.action]
            },
            "apps": configuration.apps.map { ["slug": $0.slug, "name": $0.name, "selected": $0.slug == query.app] },
            "nav": OperatorNavigation.items(current: .audit, strings: strings),
        ]
        values["problem"] = problem
        return try renderer.page("operator-audit", title: strings["operator_audit_title"], status: problem == nil ? .ok : .badRequest, values)
    }

    static func json(_ record: AuditRecord) -> [String: Any] {
        var object: [String: Any] = ["at": record.at.formatted(.iso8601), "action": record.action.rawValue]
        for (key, value) in record.presentFields { object[key] = value }
        return object
    }

    /// The table's rows of `records`, each member named.
    func rows(_ records: [AuditRecord], strings: StringsTable) async throws -> [[String: Any]] {
        let names = try await ConsoleMemberNames.load(records.map(\.member), from: members)
        return records.map { names.adding(to: Self.row($0, strings: strings), subject: $0.member) }
    }

    /// As a table row: the time as people read it (UTC), the action and the reason in words, the codes beside them.
    static func row(_ record: AuditRecord, strings: StringsTable) -> [String: Any] {
        let reasonCode = record.reason ?? ""
        let base = String(reasonCode.prefix { $0 != ":" })
        return [
            "at": record.at.formatted(.iso8601), "shown": shownTime(record.at),
            "action": strings["audit_action_\(record.action.rawValue)"], "actionCode": record.action.rawValue,
            "member": record.member ?? "–", "app": record.app ?? "–", "path": record.path ?? "–",
            "reason": strings.values["audit_reason_\(base)"] ?? (reasonCode.isEmpty ? "–" : reasonCode), "reasonCode": reasonCode,
            "detail": record.detail ?? "–",
        ]
    }

    /// `2026-11-27 14:03:09`: one line in a table cell.
    static func shownTime(_ date: Date) -> String {
        let text = date.formatted(.iso8601)
        return String(text.prefix(19)).replacingOccurrences(of: "T", with: " ")
    }
}

/// The console's sections, for the header every console page shows.
enum OperatorNavigation: String, CaseIterable {
    case overview
    case catalog
    case members
    case audit

    var path: String {
        switch self {
        case .overview: Paths.operatorPrefix
        case .catalog: Paths.operatorCatalog
        case .members: Paths.operatorMembers
        case .audit: Paths.operatorAudit
        }
    }

    static func items(current: OperatorNavigation, strings: StringsTable) -> [[String: Any]] {
        allCases.map { ["id": "operator-nav-\($0.rawValue)", "href": $0.path, "label": strings["operator_nav_\($0.rawValue)"], "current": $0 == current] }
    }
}
