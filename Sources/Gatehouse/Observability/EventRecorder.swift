import Foundation
import GatehouseCore
import Logging

/// Records product events as structured log lines and, through the `EventQueue`, in the event store. Recording
/// never waits for the store and never fails a request.
public struct EventRecorder: Sendable {
    let queue: EventQueue
    let logger: Logger
    let metrics: GatewayMetrics?

    public init(queue: EventQueue, logger: Logger, metrics: GatewayMetrics? = nil) {
        self.queue = queue
        self.logger = logger
        self.metrics = metrics
    }

    public func record(_ name: EventName, sub: String? = nil, detail: String? = nil) {
        let event = GatewayEvent(name: name, sub: sub, detail: detail)
        var metadata: Logger.Metadata = ["event": .string(name.rawValue)]
        if let sub { metadata["sub"] = .string(sub) }
        if let detail { metadata["detail"] = .string(detail) }
        logger.info("event", metadata: metadata)
        metrics?.event(name, detail: detail)
        queue.enqueue(event)
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
