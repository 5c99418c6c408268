import Foundation

/// An event of a room as the client-server API gives it (`ClientEvent`): in a timeline, in a room's state, or
/// stripped in an invite (no id, no time).
public struct MatrixEvent: Sendable, Equatable, Codable {
    public var type: String
    public var eventID: String?
    public var sender: String
    public var timestamp: Int?
    public var stateKey: String?
    public var content: JSONValue
    public var unsigned: JSONValue?
    /// What a redaction redacts, where the room's version puts it beside the content (before version 11).
    public var redacts: String?
    /// The room, where an answer lists events of several (a search's results).
    public var roomID: String?

    enum CodingKeys: String, CodingKey {
        case type, sender, content, unsigned, redacts
        case eventID = "event_id"
        case roomID = "room_id"
        case timestamp = "origin_server_ts"
        case stateKey = "state_key"
    }

    public init(
        type: String, eventID: String? = nil, sender: String, timestamp: Int? = nil, stateKey: String? = nil, content: JSONValue = .object([:]),
        unsigned: JSONValue? = nil
    ) {
        self.type = type
        self.eventID = eventID
        self.sender = sender
        self.timestamp = timestamp
        self.stateKey = stateKey
        self.content = content
        self.unsigned = unsigned
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        type = try container.decode(String.self, forKey: .type)
        sender = try container.decodeIfPresent(String.self, forKey: .sender) ?? ""
        eventID = try container.decodeIfPresent(String.self, forKey: .eventID)
        timestamp = try container.decodeIfPresent(Int.self, forKey: .timestamp)
        stateKey = try container.decodeIfPresent(String.self, forKey: .stateKey)
        content = try container.decodeIfPresent(JSONValue.self, forKey: .content) ?? .object([:])
        unsigned = try container.decodeIfPresent(JSONValue.self, forKey: .unsigned)
        redacts = try container.decodeIfPresent(String.self, forKey: .redacts)
        roomID = try container.decodeIfPresent(String.self, forKey: .roomID)
    }

    /// The event a redaction deletes (in its content from room version 11, beside it before).
    public var redactedEvent: String? { type == "m.room.redaction" ? content["redacts"]?.string ?? redacts : nil }

    /// Whether the event was redacted (deleted) since it was sent: its content is gone.
    public var isRedacted: Bool { unsigned?["redacted_because"] != nil }
}
