import Foundation

/// Who may do what in a room (`m.room.power_levels`), as far as the gateway's pages offer it: invite, remove, change
/// the name, the topic and who is an admin. The homeserver enforces it; the gateway reads it to offer only what the
/// member may do, and to refuse the rest before asking.
public struct PowerLevels: Sendable, Equatable {
    public var users: [String: Int] = [:]
    public var usersDefault = 0
    public var invite = 0
    public var kick = 50
    public var stateDefault = 50
    public var events: [String: Int] = [:]
    /// The room's creators where its version gives them a power of their own above every level (room version 12:
    /// the creation's sender and its `additional_creators`, never listed in `users`).
    public var creators: Set<String> = []

    /// An admin's level, as Matrix clients name it (the room's creator has it from the start).
    public static let admin = 100

    /// The levels `content` sets, the spec's defaults for what it leaves out.
    public init(_ content: JSONValue) {
        func level(_ value: JSONValue?) -> Int? { value?.int ?? value?.string.flatMap { Int($0) } }
        for (user, value) in content["users"]?.object ?? [:] { users[user] = level(value) }
        for (type, value) in content["events"]?.object ?? [:] { events[type] = level(value) }
        usersDefault = level(content["users_default"]) ?? 0
        invite = level(content["invite"]) ?? 0
        kick = level(content["kick"]) ?? 50
        stateDefault = level(content["state_default"]) ?? 50
    }

    /// A room with no levels set: its creator an admin, everybody else at 0 (the spec's rule).
    public init(creator: String?) {
        if let creator { users[creator] = Self.admin }
    }

    public func level(of user: String) -> Int { creators.contains(user) ? Int.max : users[user] ?? usersDefault }

    public func mayInvite(_ user: String) -> Bool { level(of: user) >= invite }

    /// Whether `user` may remove `target`: the level to kick, and above the target's own.
    public func mayRemove(_ target: String, by user: String) -> Bool { level(of: user) >= kick && level(of: user) > level(of: target) }

    /// Whether `user` may set the room's state event of `type` (its name, topic, these levels).
    public func maySet(_ type: String, by user: String) -> Bool { level(of: user) >= events[type] ?? stateDefault }

    /// Whether `user` may make `target` an admin: an admin who may change the levels, of someone who is not one yet.
    public func mayMakeAdmin(_ target: String, by user: String) -> Bool {
        level(of: user) >= Self.admin && maySet("m.room.power_levels", by: user) && level(of: target) < Self.admin
    }
}
