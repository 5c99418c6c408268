import Foundation
import GatehouseCore
import GatehouseMatrix
import Hummingbird

/// What a member does in the chat: send, mark read, accept or decline an invite, leave, mute, start a direct chat,
/// make a group. Each is a form of the gateway's own pages (its origin, the session's CSRF token); the script posts the
/// same forms and asks for JSON.
extension ChatController {
    /// The longest message the composer sends (the homeserver takes events up to 64 KB, the envelope included).
    static let messageLimit = Message.bodyLimit

    /// What a send may post: room for a message far over its limit (each byte of it encoded as `%XX`), so that a page
    /// without the script gets it back whole in the composer with the reason, not a refusal of the whole form.
    static let sendFormLimit = 512 * 1024

    func send(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        let form = try await FormPost.read(request, session: context.session, publicOrigin: chat.publicOrigin, limit: Self.sendFormLimit)
        let wantsJSON = ErrorAnswer.wantsJSON(accept: request.headers[.accept])
        let roomID = try ChatFeature.roomID(form["room"])
        let text = (form["text"] ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty else { throw ChatError.invalidMessage("empty") }
        guard text.utf8.count <= Self.messageLimit else {
            if wantsJSON { throw ChatError.tooLong(bytes: text.utf8.count, limit: Self.messageLimit) }
            let percent = String((text.utf8.count * 100 + Self.messageLimit - 1) / Self.messageLimit)
            let error = renderer.strings.text("chat_too_long", ["percent": percent])
            return try await roomPage(roomID, notice: nil, draft: Draft(text: text, error: error), context)
        }
        // The page's own id for the message makes a retry of it arrive once.
        let transaction = form["txn"].flatMap { $0.utf8.count <= 64 && $0.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "-_.".contains($0)) } ? $0 : nil }
            ?? RandomToken.make()
        let (loop, _, room) = try await chat.joined(roomID, context.session)
        // A reply answers a message of this room (the homeserver says whether it has it).
        var replyTo: String?
        if let answered = form["reply_to"], !answered.isEmpty {
            guard ChatFeature.isEventID(answered) else { throw ChatError.invalidMessage("reply_to") }
            guard let original = Message(try await event(answered, in: roomID, loop), in: room), original.notifies else {
                throw ChatError.invalidMessage("reply_to")
            }
            replyTo = original.id
        }
        // The members the page says the message mentions (picked after `@`): those of the room, `mentionLimit` at most.
        var mentions: [String] = []
        for user in (form["mentions"] ?? "").split(separator: ",").prefix(1000).map(String.init) where mentions.count < Message.mentionLimit {
            guard user != context.session.chatUserID, !mentions.contains(user), ["join", "invite"].contains(room.members[user]?.membership) else { continue }
            mentions.append(user)
        }
        // The member's Markdown as the formatted body other clients show (`MessageMarkup.formatted`).
        let eventID = try await chats.matrix(loop).send(
            room: roomID, text: text, formatted: MessageMarkup.formatted(text), replyTo: replyTo, mentions: mentions, transactionID: transaction)
        if wantsJSON { return try JSONResponse.make(["event_id": eventID, "txn": transaction]) }
        return ChatFeature.redirect(FormEncoding.url(Paths.chatRoom, adding: [("id", roomID)]))
    }

    /// Replaces the text of one of the member's own messages (`m.replace`, with the new text's markup): refused by the
    /// gateway for another member's message or a line that is no message, whatever the homeserver would allow.
    func edit(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        let form = try await FormPost.read(request, session: context.session, publicOrigin: chat.publicOrigin, limit: Self.sendFormLimit)
        let text = (form["text"] ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty else { throw ChatError.invalidMessage("empty") }
        guard text.utf8.count <= Self.messageLimit else { throw ChatError.tooLong(bytes: text.utf8.count, limit: Self.messageLimit) }
        let (loop, roomID, original) = try await ownLine(form, context)
        let eventID = try await chats.matrix(loop).replace(
            room: roomID, event: original.id, text: text, formatted: MessageMarkup.formatted(text), transactionID: RandomToken.make())
        return try JSONResponse.make(["event_id": eventID, "replaces": original.id])
    }

    /// Deletes one of the member's own messages (a redaction): refused for another member's, as an edit is.
    func delete(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        let form = try await FormPost.read(request, session: context.session, publicOrigin: chat.publicOrigin)
        let (loop, roomID, original) = try await ownLine(form, context)
        try await chats.matrix(loop).redact(room: roomID, event: original.id)
        return try JSONResponse.make(["deleted": original.id])
    }

    /// Puts a reaction (`key`) on a message of the room (`room`, `event`), or takes the member's own with that key
    /// back, as a reaction pressed again does in other chats. Refused by the gateway for a key that is no reaction
    /// (`Reaction.isValidKey`: 10,000 emoji are not one) and for a line that takes none (a line about the room, a call,
    /// a deleted message), whatever the homeserver would allow.
    func react(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        let form = try await FormPost.read(request, session: context.session, publicOrigin: chat.publicOrigin)
        let roomID = try ChatFeature.roomID(form["room"])
        guard let eventID = form["event"], ChatFeature.isEventID(eventID) else { throw RequestError.badRequest("event is required") }
        guard let key = form["key"], Reaction.isValidKey(key) else { throw ChatError.invalidReaction }
        let (loop, list, room) = try await chat.joined(roomID, context.session)
        guard let line = Message(try await event(eventID, in: roomID, loop), in: room), line.notifies, !line.isEdit else {
            throw ChatError.invalidReaction
        }
        let matrix = chats.matrix(loop)
        let own = try await matrix.reactions(room: roomID, event: eventID).first { $0.sender == list.me && $0.key == key }
        if let own {
            try await matrix.redact(room: roomID, event: own.id)
        } else {
            _ = try await matrix.react(room: roomID, event: eventID, key: key)
        }
        if ErrorAnswer.wantsJSON(accept: request.headers[.accept]) {
            return try JSONResponse.make(["event": eventID, "key": key, "reacted": own == nil])
        }
        return ChatFeature.redirect(FormEncoding.url(Paths.chatRoom, adding: [("id", roomID)]))
    }

    /// The member is typing in a room (`typing=1`, said again by the page every few seconds while they type) or
    /// stopped (`typing=0`: sent, emptied, left).
    func typing(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        let form = try await FormPost.read(request, session: context.session, publicOrigin: chat.publicOrigin)
        let roomID = try ChatFeature.roomID(form["room"])
        guard let value = form["typing"], value == "1" || value == "0" else { throw RequestError.badRequest("typing: 1 or 0") }
        let loop = try await chat.joined(roomID, context.session).loop
        try await chats.matrix(loop).typing(room: roomID, typing: value == "1")
        return try JSONResponse.make(["room": roomID, "typing": value == "1"])
    }

    /// The member's own message that a form names (`room`, `event`), as the homeserver has it now.
    private func ownLine(_ form: [String: String], _ context: SignedInRequestContext) async throws -> (SyncLoop, String, Message) {
        let roomID = try ChatFeature.roomID(form["room"])
        guard let eventID = form["event"], ChatFeature.isEventID(eventID) else { throw RequestError.badRequest("event is required") }
        let (loop, list, room) = try await chat.joined(roomID, context.session)
        guard let line = Message(try await event(eventID, in: roomID, loop), in: room), line.sender == list.me, line.isEditable else {
            throw ChatError.notYours
        }
        return (loop, roomID, line)
    }

    /// An event of the room a form names, as the homeserver has it; one it does not have (or shows the member) is the
    /// form's mistake.
    private func event(_ id: String, in room: String, _ loop: SyncLoop) async throws -> MatrixEvent {
        do {
            return try await chats.matrix(loop).event(room: room, id: id)
        } catch .refused(404, _, _) {
            throw ChatError.invalidMessage("no such event")
        }
    }

    /// The member has read a room up to an event (the page saw it).
    func markRead(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        let form = try await FormPost.read(request, session: context.session, publicOrigin: chat.publicOrigin)
        let roomID = try ChatFeature.roomID(form["room"])
        guard let event = form["event"], ChatFeature.isEventID(event) else { throw RequestError.badRequest("event is required") }
        let loop = try await chat.joined(roomID, context.session).loop
        try await chats.matrix(loop).markRead(room: roomID, event: event)
        return try JSONResponse.make(["ok": true])
    }

    /// `action=join` (accept an invite), `decline` or `leave`.
    func membership(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        let form = try await FormPost.read(request, session: context.session, publicOrigin: chat.publicOrigin)
        let roomID = try ChatFeature.roomID(form["room"])
        guard let action = form["action"], ["join", "decline", "leave"].contains(action) else {
            throw RequestError.badRequest("action: join, decline or leave")
        }
        let loop = try await chat.loop(context.session)
        let rooms = try await chat.current(loop)
        guard let room = rooms.rooms[roomID], (action == "leave") == (room.membership == .joined) else { throw ChatError.notInRoom }
        if action == "join" {
            try await chats.matrix(loop).join(room: roomID)
            // An invite to a direct chat joins the member's direct chats too.
            if rooms.isDirect(room), let inviter = room.inviter { try? await chats.matrix(loop).addDirect(room: roomID, with: inviter) }
            _ = try? await loop.refresh()
            return ChatFeature.redirect(FormEncoding.url(Paths.chatRoom, adding: [("id", roomID)]))
        }
        try await chats.matrix(loop).leave(room: roomID)
        _ = try? await loop.refresh()
        return ChatFeature.redirect(FormEncoding.url(Paths.chats, adding: [("done", action == "leave" ? "left" : "declined")]))
    }

    /// Mutes a chat (`muted=1`) or unmutes it (`muted=0`): the member's push rule at the homeserver, which their other
    /// Matrix apps honour too; back to the room's page (JSON for the script).
    func mute(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        let form = try await FormPost.read(request, session: context.session, publicOrigin: chat.publicOrigin)
        let roomID = try ChatFeature.roomID(form["room"])
        guard let value = form["muted"], value == "1" || value == "0" else { throw RequestError.badRequest("muted: 1 or 0") }
        let loop = try await chat.joined(roomID, context.session).loop
        try await chats.matrix(loop).setMuted(room: roomID, muted: value == "1")
        _ = try? await loop.refresh()
        if ErrorAnswer.wantsJSON(accept: request.headers[.accept]) { return try JSONResponse.make(["room": roomID, "muted": value == "1"]) }
        return ChatFeature.redirect(FormEncoding.url(Paths.chatRoom, adding: [("id", roomID)]))
    }

    /// Changes a group (`action`): `rename` it (`name`), set its `topic`, `add` a member by username, `remove` one or
    /// make one an `admin` (`user`). Only what the member's level in the room allows (`PowerLevels`), checked here
    /// before the homeserver checks it again; a direct chat takes none of it (it stays between its two members). What
    /// the member entered that cannot be used comes back on the room's page with the reason.
    func manage(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        let form = try await FormPost.read(request, session: context.session, publicOrigin: chat.publicOrigin)
        let roomID = try ChatFeature.roomID(form["room"])
        guard let action = form["action"], ["rename", "topic", "add", "remove", "admin"].contains(action) else {
            throw RequestError.badRequest("action: rename, topic, add, remove or admin")
        }
        let (loop, list, room) = try await chat.joined(roomID, context.session)
        guard !list.isDirect(room) else { throw ChatError.directChat }
        let me = list.me, levels = room.levels, matrix = chats.matrix(loop)
        // What cannot be used, said on the room's page (or in JSON to a script, as its refusals are).
        func again(_ key: String, _ values: [String: String] = [:]) async throws -> Response {
            let text = renderer.strings.text(key, values)
            guard !ErrorAnswer.wantsJSON(accept: request.headers[.accept]) else {
                return ErrorAnswer.json(status: .unprocessableContent, reason: key, message: text, requestID: context.id).response
            }
            return try await roomPage(roomID, notice: text, status: .unprocessableContent, context)
        }
        // A member the form names: one of the room's (joined or invited), not the member.
        func member() throws -> String {
            guard let user = form["user"], user != me, ["join", "invite"].contains(room.members[user]?.membership) else {
                throw ChatError.invalidMessage("user")
            }
            return user
        }
        switch action {
        case "rename":
            let name = (form["name"] ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
            guard levels.maySet("m.room.name", by: me) else { throw ChatError.notPermitted }
            guard (1...100).contains(name.count) else { return try await again("chat_group_error_name") }
            try await matrix.rename(room: roomID, name: name)
        case "topic":
            let topic = (form["topic"] ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
            guard levels.maySet("m.room.topic", by: me) else { throw ChatError.notPermitted }
            guard topic.count <= Message.stateValueLimit else { return try await again("chat_group_error_topic") }
            try await matrix.setTopic(room: roomID, topic: topic)
        case "add":
            let username = (form["username"] ?? "").trimmingCharacters(in: .whitespaces)
            guard levels.mayInvite(me) else { throw ChatError.notPermitted }
            let shown = ["username": Room.isolated(String(username.prefix(100)))]
            guard !username.isEmpty, let user = try await chat.chatUserID(ofUsername: username) else {
                return try await again("chat_group_error_unknown", shown)
            }
            guard !["join", "invite"].contains(room.members[user]?.membership) else { return try await again("chat_group_error_in_room", shown) }
            try await matrix.invite(room: roomID, user: user)
        case "remove":
            let user = try member()
            guard levels.mayRemove(user, by: me) else { throw ChatError.notPermitted }
            try await matrix.remove(room: roomID, user: user)
        default:
            let user = try member()
            guard levels.mayMakeAdmin(user, by: me) else { throw ChatError.notPermitted }
            try await matrix.makeAdmin(room: roomID, user: user)
        }
        _ = try? await loop.refresh()
        let done = ["rename": "renamed", "topic": "topic", "add": "added", "remove": "removed", "admin": "admin"][action] ?? action
        if ErrorAnswer.wantsJSON(accept: request.headers[.accept]) { return try JSONResponse.make(["room": roomID, "done": done]) }
        return ChatFeature.redirect(FormEncoding.url(Paths.chatRoom, adding: [("id", roomID), ("done", done)]))
    }

    /// Opens the direct chat with a member found in the directory, making it (and inviting them) the first time.
    func direct(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        let form = try await FormPost.read(request, session: context.session, publicOrigin: chat.publicOrigin)
        let roomID = try await chat.directRoom(withUsername: form["username"], context.session)
        return ChatFeature.redirect(FormEncoding.url(Paths.chatRoom, adding: [("id", roomID)]))
    }

    /// A group: its name, and the members invited by their usernames (commas between them).
    func newGroup(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        let form = try await FormPost.read(request, session: context.session, publicOrigin: chat.publicOrigin)
        let name = (form["name"] ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        let members = String((form["members"] ?? "").prefix(2000))
        // What is wrong is said beside the form, with what the member entered kept.
        func again(_ key: String, _ values: [String: String] = [:]) async throws -> Response {
            try await newChatPage(
                "", group: GroupEntry(name: String(name.prefix(100)), members: members, error: renderer.strings.text(key, values)), context)
        }
        guard (1...100).contains(name.count) else { return try await again("chat_group_error_name") }
        let usernames = members.split(whereSeparator: { $0 == "," || $0 == "\n" }).map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
        guard (1...50).contains(usernames.count) else { return try await again("chat_group_error_members") }
        var invited: [String] = []
        for username in usernames {
            guard let userID = try await chat.chatUserID(ofUsername: username) else {
                return try await again("chat_group_error_unknown", ["username": "\u{2068}\(username)\u{2069}"])
            }
            if userID != context.session.chatUserID, !invited.contains(userID) { invited.append(userID) }
        }
        let loop = try await chat.loop(context.session)
        let roomID = try await chats.matrix(loop).createRoom(name: name, invite: invited, direct: false)
        _ = try? await loop.refresh()
        return ChatFeature.redirect(FormEncoding.url(Paths.chatRoom, adding: [("id", roomID)]))
    }
}
