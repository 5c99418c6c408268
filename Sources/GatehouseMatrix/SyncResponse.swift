import Foundation

/// What `/sync` answers, as far as the gateway's chat reads it.
public struct SyncResponse: Sendable, Decodable {
    public var nextBatch: String
    public var rooms: Rooms
    public var accountData: [MatrixEvent]

    public struct Rooms: Sendable, Decodable {
        public var join: [String: JoinedRoom]
        public var invite: [String: InvitedRoom]
        public var leave: [String: LeftRoom]

        enum CodingKeys: String, CodingKey { case join, invite, leave }

        public init(join: [String: JoinedRoom] = [:], invite: [String: InvitedRoom] = [:], leave: [String: LeftRoom] = [:]) {
            self.join = join
            self.invite = invite
            self.leave = leave
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            join = try container.decodeIfPresent([String: JoinedRoom].self, forKey: .join) ?? [:]
            invite = try container.decodeIfPresent([String: InvitedRoom].self, forKey: .invite) ?? [:]
            leave = try container.decodeIfPresent([String: LeftRoom].self, forKey: .leave) ?? [:]
        }
    }

    public struct JoinedRoom: Sendable, Decodable {
        public var state: [MatrixEvent]
        public var timeline: [MatrixEvent]
        public var limited: Bool
        public var previousBatch: String?
        public var notificationCount: Int?
        /// How many of the unread notify as a mention of the member (`highlight_count`).
        public var highlightCount: Int?
        /// What is not kept in the room (`m.receipt`, `m.typing`).
        public var ephemeral: [MatrixEvent]

        public init(
            state: [MatrixEvent] = [], timeline: [MatrixEvent] = [], limited: Bool = false, previousBatch: String? = nil, notificationCount: Int? = nil,
            highlightCount: Int? = nil, ephemeral: [MatrixEvent] = []
        ) {
            self.state = state
            self.timeline = timeline
            self.limited = limited
            self.previousBatch = previousBatch
            self.notificationCount = notificationCount
            self.highlightCount = highlightCount
            self.ephemeral = ephemeral
        }

        enum CodingKeys: String, CodingKey {
            case state, timeline, ephemeral
            case unreadNotifications = "unread_notifications"
        }
        enum TimelineKeys: String, CodingKey {
            case events, limited
            case previousBatch = "prev_batch"
        }
        enum EventsKeys: String, CodingKey { case events }
        enum CountKeys: String, CodingKey {
            case notificationCount = "notification_count"
            case highlightCount = "highlight_count"
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            state = try Self.events(container, .state)
            ephemeral = try Self.events(container, .ephemeral)
            if container.contains(.timeline) {
                let timeline = try container.nestedContainer(keyedBy: TimelineKeys.self, forKey: .timeline)
                self.timeline = try timeline.decodeIfPresent([MatrixEvent].self, forKey: .events) ?? []
                limited = try timeline.decodeIfPresent(Bool.self, forKey: .limited) ?? false
                previousBatch = try timeline.decodeIfPresent(String.self, forKey: .previousBatch)
            } else {
                timeline = []
                limited = false
            }
            if container.contains(.unreadNotifications) {
                let counts = try container.nestedContainer(keyedBy: CountKeys.self, forKey: .unreadNotifications)
                notificationCount = try counts.decodeIfPresent(Int.self, forKey: .notificationCount)
                highlightCount = try counts.decodeIfPresent(Int.self, forKey: .highlightCount)
            }
        }

        static func events(_ container: KeyedDecodingContainer<CodingKeys>, _ key: CodingKeys) throws -> [MatrixEvent] {
            guard container.contains(key) else { return [] }
            return try container.nestedContainer(keyedBy: EventsKeys.self, forKey: key).decodeIfPresent([MatrixEvent].self, forKey: .events) ?? []
        }
    }

    public struct InvitedRoom: Sendable, Decodable {
        public var state: [MatrixEvent]

        public init(state: [MatrixEvent]) { self.state = state }

        enum CodingKeys: String, CodingKey { case inviteState = "invite_state" }
        enum EventsKeys: String, CodingKey { case events }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            guard container.contains(.inviteState) else {
                state = []
                return
            }
            state = try container.nestedContainer(keyedBy: EventsKeys.self, forKey: .inviteState).decodeIfPresent([MatrixEvent].self, forKey: .events) ?? []
        }
    }

    public struct LeftRoom: Sendable, Decodable {
        public init() {}
        public init(from decoder: any Decoder) throws {}
    }

    enum CodingKeys: String, CodingKey {
        case nextBatch = "next_batch"
        case rooms
        case accountData = "account_data"
    }
    enum EventsKeys: String, CodingKey { case events }

    public init(nextBatch: String, rooms: Rooms = Rooms(), accountData: [MatrixEvent] = []) {
        self.nextBatch = nextBatch
        self.rooms = rooms
        self.accountData = accountData
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        nextBatch = try container.decode(String.self, forKey: .nextBatch)
        rooms = try container.decodeIfPresent(Rooms.self, forKey: .rooms) ?? Rooms()
        if container.contains(.accountData) {
            accountData = try container.nestedContainer(keyedBy: EventsKeys.self, forKey: .accountData).decodeIfPresent([MatrixEvent].self, forKey: .events) ?? []
        } else {
            accountData = []
        }
    }
}
