import Foundation
import GatehouseCore
import PostgresNIO

public struct PostgresEventStore: EventStore {
    let database: PostgresDatabase

    public init(database: PostgresDatabase) { self.database = database }

    public func append(_ events: [GatewayEvent]) async throws {
        guard !events.isEmpty else { return }
        var bindings = PostgresBindings(capacity: events.count * 4)
        var rows: [String] = []
        for (index, event) in events.enumerated() {
            bindings.append(event.name.rawValue)
            for text in [event.sub, event.detail] {
                if let text { bindings.append(text) } else { bindings.appendNull() }
            }
            bindings.append(event.at)
            rows.append("($\(index * 4 + 1), $\(index * 4 + 2), $\(index * 4 + 3), $\(index * 4 + 4))")
        }
        try await database.query(
            PostgresQuery(unsafeSQL: "INSERT INTO events (name, sub, detail, at) VALUES " + rows.joined(separator: ", "), binds: bindings))
    }

    public func events(since: Date) async throws -> [GatewayEvent] {
        try await database.query("SELECT name, sub, detail, at FROM events WHERE at >= \(since) ORDER BY id").compactMap(Self.event)
    }

    public func latest(_ name: EventName, limit: Int) async throws -> [GatewayEvent] {
        try await database.query("SELECT name, sub, detail, at FROM events WHERE name = \(name.rawValue) ORDER BY id DESC LIMIT \(limit)")
            .compactMap(Self.event)
    }

    static func event(_ row: PostgresRow) throws -> GatewayEvent? {
        let (name, sub, detail, at) = try PostgresDatabase.decoding { try row.decode((String, String?, String?, Date).self) }
        return EventName(rawValue: name).map { GatewayEvent(name: $0, sub: sub, detail: detail, at: at) }
    }

    public func counts(in window: DateInterval) async throws -> [EventName: EventCount] {
        let rows = try await database.query(
            """
            SELECT name, COUNT(*), COUNT(DISTINCT sub) FROM events WHERE at >= \(window.start) AND at < \(window.end) GROUP BY name
            """)
        var counts: [EventName: EventCount] = [:]
        for row in rows {
            let (name, events, members) = try PostgresDatabase.decoding { try row.decode((String, Int, Int).self) }
            if let name = EventName(rawValue: name) { counts[name] = EventCount(events: events, members: members) }
        }
        return counts
    }
}
