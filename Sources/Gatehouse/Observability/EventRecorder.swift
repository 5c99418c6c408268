import Foundation
import GatehouseCore
import GatehouseStorage
import Logging
import NIOConcurrencyHelpers
import NIOCore

/// Records product events as structured log lines and, through the `EventQueue`, in the event store. Recording
/// never waits for the store and never fails a request.
public struct EventRecorder: Sendable {
    let queue: EventQueue
    let logger: Logger
    let metrics: GatewayMetrics?
    /// Where the events about sessions and operators' actions go too (`auditAction`).
    let audit: AuditTrail?
    /// When each (event, member) of `recordOnceIn` was last recorded.
    private let lastRecorded = NIOLockedValueBox<[RecentKey: NIODeadline]>([:])
    /// What each thread last found in `lastRecorded`, looked at first: within its window, nothing is recorded and
    /// the shared table is not taken (no lock shared by the event loops on each page that shows the banner).
    private let lastSeen = ThreadMemo<RecentKey, NIODeadline>(limit: 4096)

    public init(queue: EventQueue, logger: Logger, metrics: GatewayMetrics? = nil, audit: AuditTrail? = nil) {
        self.audit = audit
        self.queue = queue
        self.logger = logger
        self.metrics = metrics
    }

    private struct RecentKey: Hashable {
        let name: EventName
        let sub: String
    }

    /// At most this many members are remembered by `recordOnceIn`; past it, those recorded longer ago than their
    /// window are forgotten (a member forgotten early is recorded once more, nothing worse).
    static let recentLimit = 100_000

    /// Counts `name` in its metric every time, and records the event (log line and store) for `sub` only when it was
    /// not recorded for them within `window`: an event that comes with every page a member reads (the banner shown)
    /// is one row per member and window, not one per page, while the metric still counts every showing.
    public func recordOnceIn(_ window: TimeAmount, _ name: EventName, sub: String) {
        let now = NIODeadline.now()
        let key = RecentKey(name: name, sub: sub)
        if let seen = lastSeen[key], now - seen < window { return countOnly(name) }
        // When it was last recorded, and whether that is now.
        let (recorded, due) = lastRecorded.withLockedValue { recent -> (NIODeadline, Bool) in
            if let last = recent[key], now - last < window { return (last, false) }
            if recent.count >= Self.recentLimit {
                let cutoff = now - window
                recent = recent.filter { $0.value > cutoff }
                if recent.count >= Self.recentLimit { recent.removeAll() }
            }
            recent[key] = now
            return (now, true)
        }
        lastSeen.remember(recorded, for: key)
        if due { record(name, sub: sub) } else { countOnly(name) }
    }

    private func countOnly(_ name: EventName) {
        metrics?.event(name, detail: nil)
    }

    public func record(_ name: EventName, sub: String? = nil, detail: String? = nil) {
        let event = GatewayEvent(name: name, sub: sub, detail: detail)
        var metadata: Logger.Metadata = ["event": .string(name.rawValue)]
        if let sub { metadata["sub"] = .string(sub) }
        if let detail { metadata["detail"] = .string(detail) }
        logger.info("event", metadata: metadata)
        metrics?.event(name, detail: detail)
        queue.enqueue(event)
        if let audit, let action = Self.auditAction(name) {
            // An operator's change is named by the event (`registration_reset`, its detail what was done); the other
            // events say why in their detail.
            let change = action == .operatorChange
            audit.record(AuditRecord(action: action, member: sub, reason: change ? name.rawValue : detail, detail: change ? detail : nil))
        }
    }

    /// The events the audit trail holds too: how sessions begin and end, proofs, a second network, operators' resets.
    static func auditAction(_ name: EventName) -> AuditRecord.Action? {
        switch name {
        case .ssoLoginSuccess: .signedIn
        case .ssoLoginFailure: .signInFailed
        case .ssoLogout: .signedOut
        case .stepUp: .stepUp
        case .sessionNetworkChanged: .sessionNetworkChanged
        case .registrationReset: .operatorChange
        default: nil
        }
    }

    /// Applies a level change, recording `state_inconsistency_detected` when the transition does not exist.
    public func transition(_ change: LevelChange, from level: AuthLevel, sub: String?, isRegistered: Bool = false) -> AuthLevel? {
        guard let next = LevelTransition.apply(change, from: level, isRegistered: isRegistered) else {
            record(.stateInconsistencyDetected, sub: sub, detail: "\(change.rawValue) from \(level.rawValue)")
            return nil
        }
        return next
    }
}
