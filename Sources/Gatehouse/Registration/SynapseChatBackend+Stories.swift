import Foundation
import GatehouseMatrix

/// What the story reaper asks the homeserver's admin API: the story rooms there are, and the stories in one that
/// are past their time and not yet redacted.
extension SynapseChatBackend {
    /// Every story room (`room_type` `org.gatehouse.stories`) with its creator, a page of 500 rooms at a time.
    func storyRooms() async throws(ChatBackendError) -> [(room: String, creator: String)] {
        var found: [(String, String)] = []
        var from: Int? = 0
        while let start = from {
            let answer = try await call(.GET, "/_synapse/admin/v1/rooms", query: [("limit", "500"), ("from", String(start))])
            guard answer.status == 200 else { throw answer.failure }
            for room in answer.json["rooms"]?.array ?? [] where room["room_type"]?.string == Room.storiesType {
                if let id = room["room_id"]?.string, let creator = room["creator"]?.string { found.append((id, creator)) }
            }
            from = answer.json["next_batch"]?.int
        }
        return found
    }

    /// The ids of `creator`'s stories in `room` sent at or before `cutoff` (milliseconds) and not redacted, among
    /// its latest 500 story events.
    func expiredStories(in room: String, by creator: String, cutoff: Int) async throws(ChatBackendError) -> [String] {
        let filter = #"{"types":["\#(Story.eventType)"]}"#
        let answer = try await call(
            .GET, "/_synapse/admin/v1/rooms/\(Self.segment(room))/messages", query: [("dir", "b"), ("limit", "500"), ("filter", filter)])
        guard answer.status == 200 else { throw answer.failure }
        return (answer.json["chunk"]?.array ?? []).compactMap { event in
            guard event["sender"]?.string == creator, let id = event["event_id"]?.string, let ts = event["origin_server_ts"]?.int, ts <= cutoff,
                event["unsigned"]?["redacted_because"] == nil, event["content"]?.object?.isEmpty == false
            else { return nil }
            return id
        }
    }
}
