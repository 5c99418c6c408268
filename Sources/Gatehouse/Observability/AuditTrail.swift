import Foundation
import GatehouseCore
import GatehouseStorage
import Logging
import NIOConcurrencyHelpers
import ServiceLifecycle

/// Who opened which app, what was refused and why, how sessions began and ended, and what operators changed
/// (`AuditRecord`): each record goes to the store (through a `WriteQueue`, never waiting on a request's path), where
/// the console reads it and `audit.retention_days` removes it, and, with `audit.file`, as a JSON line to that file or
/// standard output for the security team's collector.
public final class AuditTrail: Service, Sendable {
    let queue: WriteQueue<AuditRecord>
    let lines: LogOutput?
    /// The apps each session has opened on this replica: the first request to an app in a session is recorded, the
    /// rest are not. Forgotten at `openedLimit` (an app opened again after that is recorded again, nothing worse).
    private let opened = NIOLockedValueBox<Set<Opened>>([])
    /// What each thread already found in `opened`, looked at first (no lock shared by the event loops on each page).
    private let openedSeen = ThreadMemo<Opened, Bool>(limit: 4096)
    static let openedLimit = 200_000

    private struct Opened: Hashable {
        let session: String
        let app: String
    }

    init(store: any AuditStore, configuration: AuditConfiguration, logger: Logger) throws {
        queue = WriteQueue(what: "audit records", logger: logger) { try await store.append($0) }
        lines = try configuration.file.map(Self.output)
    }

    /// Standard output for `-`, else the file, appended to (made if missing, readable by the gateway's user only).
    static func output(_ file: String) throws -> LogOutput {
        if file == "-" { return .standard }
        let descriptor = open(file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw ConfigurationError(problems: [ConfigurationProblem("audit.file", "cannot be opened for appending: \(String(cString: strerror(errno)))")])
        }
        return LogOutput(fileDescriptor: descriptor)
    }

    /// Stores what waits until a graceful shutdown, then writes the last lines.
    public func run() async throws {
        try await queue.run()
        lines?.flush()
    }

    func record(_ record: AuditRecord) {
        lines?.append(Self.line(record))
        queue.enqueue(record)
    }

    /// `session`'s first request to `app` in this session (`path` without its query).
    func opened(_ app: String, path: String, session: Session) {
        let key = Opened(session: session.id, app: app)
        guard openedSeen[key] == nil else { return }
        openedSeen.remember(true, for: key)
        let first = opened.withLockedValue { opened in
            if opened.count >= Self.openedLimit { opened.removeAll() }
            return opened.insert(key).inserted
        }
        if first { record(AuditRecord(action: .appOpened, member: session.identity.sub, app: app, path: path)) }
    }

    /// `error`, when it refused a request (a rate limit, the allowlist, access to an app or a page), with the member
    /// when there is one; other errors (an app down, a bad request) are failures, not refusals, and are not recorded.
    /// `app` is the app's slug, when the caller knows it; else it is read from an `/apps/<slug>/…` path.
    func refusal(_ error: any Error, member: String?, app: String? = nil, path: String) {
        guard let refusal = error as? any PresentableError, refusal.isRefusal else { return }
        record(
            AuditRecord(
                action: .refused, member: member, app: app ?? Self.app(inPath: path), path: path, reason: refusal.reason,
                detail: "status \(refusal.status.code)"))
    }

    /// The slug of `/apps/<slug>/…`.
    static func app(inPath path: String) -> String? {
        guard path.hasPrefix(Paths.appsPrefix + "/") else { return nil }
        let slug = path.dropFirst(Paths.appsPrefix.count + 1).prefix { $0 != "/" && $0 != "?" }
        return slug.isEmpty ? nil : String(slug)
    }

    /// `{"time":"…","action":"…","member":"…","app":"…","path":"…","reason":"…","detail":"…"}` and a newline; absent
    /// fields are left out.
    static func line(_ record: AuditRecord) -> [UInt8] {
        var out: [UInt8] = Array(#"{"time":""#.utf8)
        out += JSONLogHandler.timestamp(record.at).utf8
        out += #"","action":""#.utf8
        out += record.action.rawValue.utf8
        out.append(UInt8(ascii: "\""))
        for (key, value) in record.presentFields {
            out += #","\#(key)":"#.utf8
            JSONLogHandler.appendString(value, to: &out)
        }
        out += "}\n".utf8
        return out
    }
}
