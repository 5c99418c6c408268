import Foundation
import Logging

/// Records product events in the event store and as structured log lines. Recording never fails a request: a
/// storage failure is logged once, here.
public struct EventRecorder: Sendable {
    let store: any EventStore
    let logger: Logger

    public init(store: any EventStore, logger: Logger) {
        self.store = store
        self.logger = logger
    }

    public func record(_ name: EventName, sub: String? = nil, detail: String? = nil) async {
        let event = GatewayEvent(name: name, sub: sub, detail: detail)
        var metadata: Logger.Metadata = ["event": .string(name.rawValue)]
        if let sub { metadata["sub"] = .string(sub) }
        if let detail { metadata["detail"] = .string(detail) }
        logger.info("event", metadata: metadata)
        do {
            try await store.append(event)
        } catch {
            logger.error("event not stored", metadata: ["event": .string(name.rawValue), "error": .string("\(error)")])
        }
    }

    /// Applies a level change, recording `state_inconsistency_detected` when the transition does not exist.
    public func transition(_ change: LevelChange, from level: AuthLevel, sub: String?, isRegistered: Bool = false) async -> AuthLevel? {
        guard let next = LevelTransition.apply(change, from: level, isRegistered: isRegistered) else {
            await record(.stateInconsistencyDetected, sub: sub, detail: "\(change.rawValue) from \(level.rawValue)")
            return nil
        }
        return next
    }
}
