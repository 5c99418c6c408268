import Foundation

/// One line of the audit trail: who did what, to which app and path, when, and why it was refused. What a security
/// team exports (`audit.file`, JSON lines) and what the operator console filters (by member, app and day).
public struct AuditRecord: Sendable, Equatable, Codable {
    public enum Action: String, Sendable, Codable, CaseIterable {
        /// A member's first request to an app in a session (on this replica).
        case appOpened = "app_opened"
        /// A request refused: the app's rules, its level, roles or groups, the allowlist, a rate limit, a proof asked.
        case refused
        case signedIn = "signed_in"
        case signInFailed = "sign_in_failed"
        /// The session ended (`detail`: why: signed out, timed out, refresh refused, ended from another session…).
        case signedOut = "signed_out"
        /// The member proved themselves again (`detail`: `sign_in`, `pin`, or why the proof was refused).
        case stepUp = "step_up"
        /// A session used from a second network (`detail`: `flagged`, or `ended`).
        case sessionNetworkChanged = "session_network_changed"
        /// An operator's change: the configuration reloaded (or refused), an app of the catalog, a member's upgrade reset.
        case operatorChange = "operator_change"
    }

    public var at: Date
    public var action: Action
    /// The member's subject (the SSO `sub`), or the operator's; `nil` for what no member did (a signal, an address).
    public var member: String?
    public var app: String?
    /// The path asked for, without its query (which may carry tokens).
    public var path: String?
    /// A stable code: why a request was refused, how a session ended, what an operator changed.
    public var reason: String?
    /// More, where the action has it: an operator change's before and after, a refusal's status.
    public var detail: String?

    public init(
        action: Action, member: String? = nil, app: String? = nil, path: String? = nil, reason: String? = nil, detail: String? = nil,
        at: Date = Date()
    ) {
        self.at = at
        self.action = action
        self.member = member
        self.app = app
        self.path = path.map { String($0.prefix { $0 != "?" }.prefix(512)) }
        self.reason = reason
        self.detail = detail
    }

    /// The fields a record may leave out, named as the JSON lines and the console's JSON name them, those it has only.
    public var presentFields: [(name: String, value: String)] {
        [("member", member), ("app", app), ("path", path), ("reason", reason), ("detail", detail)].compactMap { name, value in
            value.map { (name, $0) }
        }
    }
}

/// Which records to read: any of member, app and UTC day, newest first, at most `limit`.
public struct AuditQuery: Sendable, Equatable {
    public var member: String?
    public var app: String?
    public var action: AuditRecord.Action?
    /// The records of this day (UTC): from its start for 24 hours.
    public var day: Date?
    public var limit: Int

    public init(member: String? = nil, app: String? = nil, action: AuditRecord.Action? = nil, day: Date? = nil, limit: Int = 200) {
        self.member = member
        self.app = app
        self.action = action
        self.day = day
        self.limit = limit
    }

    /// The start and end of `day`, when there is one.
    public var window: DateInterval? {
        guard let day else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return DateInterval(start: calendar.startOfDay(for: day), duration: 86_400)
    }
}
