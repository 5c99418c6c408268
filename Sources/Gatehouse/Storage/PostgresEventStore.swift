import Foundation
import PostgresNIO

public struct PostgresEventStore: EventStore {
    let database: PostgresDatabase

    public init(database: PostgresDatabase) { self.database = database }

    public func append(_ event: GatewayEvent) async throws {
        try await database.query(
            "INSERT INTO events (name, sub, detail, at) VALUES (\(event.name.rawValue), \(event.sub), \(event.detail), \(event.at))")
    }

    public func events(since: Date) async throws -> [GatewayEvent] {
        try await database.query("SELECT name, sub, detail, at FROM events WHERE at >= \(since) ORDER BY id").compactMap { row in
            let (name, sub, detail, at) = try PostgresDatabase.decoding { try row.decode((String, String?, String?, Date).self) }
            return EventName(rawValue: name).map { GatewayEvent(name: $0, sub: sub, detail: detail, at: at) }
        }
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
