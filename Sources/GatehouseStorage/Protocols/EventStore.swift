import Foundation
import GatehouseCore

public protocol EventStore: Sendable {
    /// Stores `events` in one statement (all or none).
    func append(_ events: [GatewayEvent]) async throws
    func events(since: Date) async throws -> [GatewayEvent]
    /// The newest `limit` events named `name`, newest first.
    func latest(_ name: EventName, limit: Int) async throws -> [GatewayEvent]
    /// Events and distinct members per event name within `window`.
    func counts(in window: DateInterval) async throws -> [EventName: EventCount]
}

/// How often an event happened in a window, and to how many distinct members.
public struct EventCount: Sendable, Equatable {
    public var events: Int
    public var members: Int

    public init(events: Int, members: Int) {
        self.events = events
        self.members = members
    }
}
