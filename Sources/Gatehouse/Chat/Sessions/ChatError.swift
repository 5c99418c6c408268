import GatehouseMatrix
import HTTPTypes

/// Why the chat could not do what a member asked.
public enum ChatError: PresentableError, Equatable {
    /// The member has no Matrix session to have: not registered, no chat account, or the chat feature not theirs.
    case notAllowed
    /// The homeserver refused or did not answer.
    case homeserver(MatrixError)
    /// The session's device was logged out elsewhere; the next request has a new one.
    case deviceReplaced
    /// The room is not one of the member's (an id changed in a URL or a form).
    case notInRoom
    /// What the member sent cannot be sent (empty, a bad field).
    case invalidMessage(String)
    /// A line the member may not change: another member's, or no message (a line about the room, a call, a deletion).
    case notYours
    /// A message longer than one message may be, in UTF-8 bytes (what the homeserver counts).
    case tooLong(bytes: Int, limit: Int)
    /// A reaction's key that is not one (empty, longer than `Reaction.keyCharacters`, several lines), or on a line
    /// that takes none.
    case invalidReaction
    /// A change of a group the member's level in it does not allow (only its admins rename it, remove members…).
    case notPermitted
    /// A change a direct chat does not take: it stays between its two members, with no name of its own.
    case directChat

    public var status: HTTPResponse.Status {
        switch self {
        case .notAllowed, .notInRoom, .notYours, .notPermitted: .forbidden
        case .directChat: .conflict
        case .homeserver(let error): error.isTransient ? .serviceUnavailable : .badGateway
        case .deviceReplaced: .serviceUnavailable
        case .invalidMessage, .invalidReaction: .badRequest
        case .tooLong: .contentTooLarge
        }
    }

    public var reason: String {
        switch self {
        case .notAllowed: "chat_not_allowed"
        case .homeserver(let error): "chat_homeserver:\(error.reason)"
        case .deviceReplaced: "chat_device_replaced"
        case .notInRoom: "chat_not_in_room"
        case .notYours: "chat_not_yours"
        case .invalidMessage(let detail): "chat_invalid_message:\(detail)"
        case .tooLong(let bytes, let limit): "chat_too_long:\(bytes)>\(limit)"
        case .invalidReaction: "chat_invalid_reaction"
        case .notPermitted: "chat_not_permitted"
        case .directChat: "chat_direct_chat"
        }
    }

    public var messageKey: String {
        switch self {
        case .notAllowed: "error_chat_not_allowed"
        case .homeserver: "error_chat_unavailable"
        case .deviceReplaced: "error_chat_device_replaced"
        case .notInRoom: "error_chat_not_in_room"
        case .notYours: "error_chat_not_yours"
        case .invalidMessage: "error_chat_invalid"
        case .tooLong: "error_chat_too_long"
        case .invalidReaction: "error_chat_invalid_reaction"
        case .notPermitted: "error_chat_not_permitted"
        case .directChat: "error_chat_direct_chat"
        }
    }
}

extension ChatError {
    /// What a homeserver's failure is to the member: a refusal (`403`) is a room that is not theirs; a token refused,
    /// a device replaced (by the holder, `ChatSessions`) for their next request.
    public init(_ error: MatrixError) {
        switch error {
        case .refused(403, _, _): self = .notInRoom
        case .tokenInvalid: self = .deviceReplaced
        default: self = .homeserver(error)
        }
    }
}
