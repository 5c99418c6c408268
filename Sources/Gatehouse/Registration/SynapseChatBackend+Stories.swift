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
            for room in (answer.json["rooms"] as? [[String: Any]]) ?? [] where room["room_type"] as? String == Room.storiesType {
                if let id = room["room_id"] as? String, let creator = room["creator"] as? String { found.append((id, creator)) }
            }
            from = answer.json["next_batch"] as? Int
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
        return ((answer.json["chunk"] as? [[String: Any]]) ?? []).compactMap { event in
            guard event["sender"] as? String == creator, let id = event["event_id"] as? String, let ts = event["origin_server_ts"] as? Int, ts <= cutoff,
                (event["unsigned"] as? [String: Any])?["redacted_because"] == nil, (event["content"] as? [String: Any])?.isEmpty == false
            else { return nil }
            return id
        }
    }
}
