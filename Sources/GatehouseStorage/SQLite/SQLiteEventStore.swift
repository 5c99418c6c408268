import Foundation
import GatehouseCore
import SQLiteNIO

public struct SQLiteEventStore: EventStore {
    let database: SQLiteDatabase

    public init(database: SQLiteDatabase) { self.database = database }

    public func append(_ events: [GatewayEvent]) async throws {
        guard !events.isEmpty else { return }
        try await database.query(
            "INSERT INTO events (name, sub, detail, at) VALUES " + Array(repeating: "(?, ?, ?, ?)", count: events.count).joined(separator: ", "),
            events.flatMap { event in [.text(event.name.rawValue), .text(event.sub), .text(event.detail), .time(event.at)] }
        )
    }

    public func events(since: Date) async throws -> [GatewayEvent] {
        try await database.query("SELECT name, sub, detail, at FROM events WHERE at >= ? ORDER BY id", [.time(since)]).compactMap(Self.event)
    }

    public func latest(_ name: EventName, limit: Int) async throws -> [GatewayEvent] {
        try await database.query(
            "SELECT name, sub, detail, at FROM events WHERE name = ? ORDER BY id DESC LIMIT ?", [.text(name.rawValue), .integer(limit)]
        ).compactMap(Self.event)
    }

    static func event(_ row: SQLiteRow) -> GatewayEvent? {
        guard let name = row.column("name")?.string.flatMap(EventName.init(rawValue:)) else { return nil }
        return GatewayEvent(
            name: name, sub: row.column("sub")?.string, detail: row.column("detail")?.string,
            at: Date(timeIntervalSince1970: row.column("at")?.double ?? 0)
        )
    }

    public func counts(in window: DateInterval) async throws -> [EventName: EventCount] {
        let rows = try await database.query(
            "SELECT name, COUNT(*) AS events, COUNT(DISTINCT sub) AS members FROM events WHERE at >= ? AND at < ? GROUP BY name",
            [.time(window.start), .time(window.end)])
        var counts: [EventName: EventCount] = [:]
        for row in rows {
            guard let name = row.column("name")?.string.flatMap(EventName.init(rawValue:)) else { continue }
            counts[name] = EventCount(events: row.column("events")?.integer ?? 0, members: row.column("members")?.integer ?? 0)
        }
        return counts
    }
}
