import Foundation

/// The member's push rules as far as the chat reads and writes them: a chat is muted by an override rule for the
/// room that does nothing (`actions: []`), as Element mutes one, so that the member's other Matrix apps show it
/// muted too and the homeserver counts and pushes nothing for it (its `notification_count` stays, and its pusher
/// is not called).
public enum PushRules {
    /// The override rule that mutes `room`: its id is the room's.
    public static func muteRule(room: String) -> JSONValue {
        .object([
            "actions": .array([]),
            "conditions": .array([.object(["kind": .string("event_match"), "key": .string("room_id"), "pattern": .string(room)])]),
        ])
    }

    /// The rooms muted by the rules of `m.push_rules` account data (`content`): an enabled override rule named for a
    /// room, matching that room alone, that notifies nothing (no action, or the old `dont_notify`).
    public static func mutedRooms(_ content: JSONValue) -> Set<String> {
        var muted: Set<String> = []
        for rule in content["global"]?["override"]?.array ?? [] {
            guard let id = rule["rule_id"]?.string, id.hasPrefix("!"), rule["enabled"]?.bool != false,
                let conditions = rule["conditions"]?.array, conditions.count == 1,
                conditions[0]["kind"]?.string == "event_match", conditions[0]["key"]?.string == "room_id", conditions[0]["pattern"]?.string == id
            else { continue }
            let actions = rule["actions"]?.array ?? []
            if actions.allSatisfy({ $0.string == "dont_notify" }) { muted.insert(id) }
        }
        return muted
    }
}
