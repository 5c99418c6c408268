import Foundation
import GatehouseCore
import GatehouseMatrix
import GatehouseStorage

/// The chat's rooms and messages as the pages and the event stream show them: plain values (text, numbers, flags)
/// for the templates (a line and a room's row are rendered by one partial each, `chat-message` and
/// `chat-room-row`, for the page and the stream alike). Every text is the sender's own, escaped by the template:
/// never markup. Every member's name is the room's (`Room.name(of:)`: isolated, told apart from a
/// look-alike), put into a sentence once (`StringsTable.text`).
enum ChatViews {
    static func summary(_ room: Room, in list: RoomList, strings: StringsTable) -> [String: Any] {
        let name = list.displayName(of: room)
        let shownName = name.isEmpty ? strings["chat_unnamed"] : name
        var values: [String: Any] = [
            "id": room.id, "href": FormEncoding.url(Paths.chatRoom, adding: [("id", room.id)]), "name": shownName,
            "initials": AppIcon.monogram(shownName), "tone": AppIcon.tone(of: room.id), "unread": room.unread, "hasUnread": room.unread > 0,
            "invite": room.membership == .invited, "direct": list.isDirect(room), "encrypted": room.isEncrypted,
            "unreadLabel": strings.text("chat_unread", ["count": String(room.unread)]), "muted": list.mutedRooms.contains(room.id),
        ]
        if room.membership == .invited {
            let inviter = room.inviter.map { room.name(of: $0) } ?? ""
            values["inviteText"] = strings.text(list.isDirect(room) ? "chat_invite_direct" : "chat_invite_group", ["name": inviter])
        }
        if let last = room.lastMessage {
            values["last"] = preview(last, room: room, me: list.me, strings: strings)
            values["at"] = iso(last.timestamp)
        }
        return values
    }

    /// One line under a room's name: who said what (a deleted or encrypted message said so).
    static func preview(_ message: Message, room: Room, me: String, strings: StringsTable) -> String {
        switch message.kind {
        case .membership: return line(message, room: room, strings: strings)
        case .state: return stateLine(message, room: room, strings: strings)
        case .call: return callLine(message, room: room, strings: strings)
        default:
            let who = message.sender == me ? strings["chat_you"] : room.name(of: message.sender)
            return "\(who): \(gist(message, strings: strings))"
        }
    }

    /// What a message says, short: its text's start, or what it is (deleted, encrypted, a kind not shown).
    static func gist(_ message: Message, strings: StringsTable) -> String {
        switch message.kind {
        case .deleted: strings["chat_deleted"]
        case .encrypted: strings["chat_encrypted_message"]
        case .other: strings["chat_other_message"]
        default: String(message.body.prefix(140))
        }
    }

    /// What a change tells the member of (`notify`), as the notification says it: each message of another's that
    /// raised its room's count (`RoomList.Changes.notifying`) and each invite, with its title (who, and where in a
    /// group; a mention says so), the room's page on the gateway that a click opens, and its id, by which the browser
    /// shows it once. A muted room or a story tells of nothing. The live feed is heard on origins apps' scripts run
    /// in (app hosts, and the gateway's own where apps are path-mounted), so a message's text is never in it: its
    /// body says that a message came, and a gateway page asks for the text with its page token (`noticeText`).
    static func notices(_ changes: RoomList.Changes, _ list: RoomList, base: String, strings: StringsTable) -> [[String: Any]] {
        func notice(_ id: String, _ room: Room, title: String, body: String, kind: String) -> [String: Any] {
            [
                "id": id, "room": room.id, "title": title, "body": body, "kind": kind,
                "url": base + FormEncoding.url(Paths.chatRoom, adding: [("id", room.id)]),
            ]
        }
        var notices: [[String: Any]] = []
        for (id, messages) in changes.notifying.sorted(by: { $0.key < $1.key }) {
            guard let room = list.rooms[id], !room.isStories, !list.mutedRooms.contains(id) else { continue }
            let mention = changes.mentioning.contains(id)
            let key = (mention ? "notify_mention" : "notify_message") + (list.isDirect(room) ? "" : "_group")
            for message in messages {
                let title = strings.text(key, ["name": room.name(of: message.sender), "room": list.displayName(of: room)])
                notices.append(notice(message.id, room, title: title, body: strings["notify_message_body"], kind: mention ? "mention" : "message"))
            }
        }
        for id in changes.invited.sorted() {
            guard let room = list.rooms[id], !room.isStories, let inviter = room.inviter else { continue }
            let body = strings.text(list.isDirect(room) ? "chat_invite_direct" : "chat_invite_group", ["name": room.name(of: inviter)])
            notices.append(notice(id, room, title: room.name(of: inviter), body: body, kind: "invite"))
        }
        return notices
    }

    /// Messages a search found, as its results list them: the chat, who, when, the start of the text, and the room's
    /// page opened at the message. Edits (their fallback text) and lines that are no message are left out.
    static func found(_ events: [MatrixEvent], in list: RoomList, strings: StringsTable) -> [[String: Any]] {
        events.compactMap { event in
            guard let roomID = event.roomID, let room = list.rooms[roomID], let message = Message(event, in: room), message.notifies, !message.isEdit
            else { return nil }
            let name = list.displayName(of: room)
            return [
                "room": name.isEmpty ? strings["chat_unnamed"] : name, "sender": room.name(of: message.sender), "gist": gist(message, strings: strings),
                "at": iso(message.timestamp), "shownAt": shownTime(message.timestamp), "id": message.id,
                "href": FormEncoding.url(Paths.chatRoom, adding: [("id", roomID), ("at", message.id)]),
            ]
        }
    }

    /// A message's text as its notification shows it (the first 140 characters; an emote with its sender's name).
    static func noticeText(_ message: Message, room: Room, strings: StringsTable) -> String {
        message.kind == .emote ? "* \(room.name(of: message.sender)) \(message.body.prefix(140))" : gist(message, strings: strings)
    }

    /// The timeline's lines, oldest first: edits and reactions folded into what they edit or react to, a day's first
    /// line marked. `readUpTo`: the member's own read receipt, where the first line after it (and after the member's
    /// own latest) that is another's is marked as the first new one; else, with `unread` messages, the `unread`-th
    /// line of others' from the end is.
    static func timeline(
        _ events: some Sequence<MatrixEvent>, room: Room, me: String, strings: StringsTable, links: MessageLinks, readUpTo: String? = nil,
        unread: Int = 0
    ) -> [[String: Any]] {
        var messages: [Message] = []
        var reactions: [String: Reactions] = [:]
        var order: [String: Int] = [:]
        for event in events {
            if let id = event.eventID { order[id] = order.count }
            if let reaction = Reaction(event) {
                reactions[reaction.target, default: Reactions()].add(reaction)
                continue
            }
            guard let message = Message(event, in: room) else { continue }
            if message.isEdit {
                if let index = messages.firstIndex(where: { $0.mayBeReplaced(by: message) }) {
                    messages[index].body = message.body
                    messages[index].formattedBody = message.formattedBody
                    messages[index].isEdited = true
                }
                continue
            }
            messages.append(message)
        }
        var day = ""
        let byID = Dictionary(messages.map { ($0.id, $0) }, uniquingKeysWith: { $1 })
        let firstNew = firstUnread(messages, order: order, me: me, readUpTo: readUpTo, unread: unread)
        return messages.map { message in
            let answered = message.replyTo.flatMap { id in byID[id] ?? room.recentLines.last { $0.id == id } }
            var values = self.message(
                message, room: room, me: me, strings: strings, links: links, answering: answered,
                reactions: reactions[message.id] ?? room.reactions[message.id])
            if message.id == firstNew { values["firstNew"] = true }
            let thisDay = String(iso(message.timestamp).prefix(10))
            if thisDay != day {
                values["day"] = thisDay
                day = thisDay
            }
            return values
        }
    }

    /// The first line the member has not read: the first of another's after their read receipt and their own latest
    /// line; without the receipt in the page, the `unread`-th of others' lines from the end.
    static func firstUnread(_ messages: [Message], order: [String: Int], me: String, readUpTo: String?, unread: Int) -> String? {
        if let readUpTo, let read = order[readUpTo] {
            let own = messages.last { $0.sender == me }.flatMap { order[$0.id] } ?? -1
            return messages.first { $0.sender != me && $0.notifies && (order[$0.id] ?? 0) > max(read, own) }?.id
        }
        guard unread > 0 else { return nil }
        let own = messages.lastIndex { $0.sender == me } ?? -1
        let after = messages[(own + 1)...].filter { $0.sender != me && $0.notifies }
        return after.isEmpty ? nil : after[max(0, after.count - unread)].id
    }

    /// One line; `answering`: the message a reply answers, where the page knows it (its quote says who and what).
    static func message(
        _ message: Message, room: Room, me: String, strings: StringsTable, links: MessageLinks, answering: Message? = nil, reactions: Reactions? = nil
    ) -> [String: Any] {
        var values: [String: Any] = [
            "id": message.id, "sender": message.sender, "senderName": room.name(of: message.sender), "mine": message.sender == me,
            "at": iso(message.timestamp), "shownAt": shownTime(message.timestamp), "kind": message.kind.rawValue, "edited": message.isEdited,
            // Every message offers Reply, the member's own Edit and Delete too (the page's script shows them).
            "repliable": message.notifies, "changeable": message.sender == me && message.isEditable,
            "mentionsMe": message.sender != me && message.mentions.contains(me),
        ]
        if let replyTo = message.replyTo {
            var reply: [String: Any] = ["id": replyTo]
            if let answering, answering.kind != .deleted {
                reply["name"] = room.name(of: answering.sender)
                reply["gist"] = gist(answering, strings: strings)
            }
            values["reply"] = reply
        }
        switch message.kind {
        case .text, .notice: values["body"] = markup(message, links: links)
        case .emote: values["body"] = "* " + MessageMarkup.escaped(room.name(of: message.sender)) + " " + markup(message, links: links)
        case .deleted: values["note"] = strings["chat_deleted"]
        case .encrypted: values["note"] = strings["chat_encrypted_message"]
        case .other: values["note"] = strings["chat_other_message"]
        case .membership: values["note"] = line(message, room: room, strings: strings)
        case .state: values["note"] = stateLine(message, room: room, strings: strings)
        case .call: values["note"] = callLine(message, room: room, strings: strings)
        }
        values["hasBody"] = values["body"] != nil
        values["formatted"] = message.formattedBody != nil
        if message.notifies { values["reactions"] = self.reactions(reactions, room: room, me: me, strings: strings) }
        return values
    }

    /// A line's reactions as its buttons show them: the key (cut where another client sent a long one), how many, and
    /// who (the first ten by name).
    static func reactions(_ reactions: Reactions?, room: Room, me: String, strings: StringsTable) -> [[String: Any]] {
        (reactions?.entries ?? []).map { entry in
            let shown = entry.key.count > Reaction.keyCharacters ? String(entry.key.prefix(Reaction.keyCharacters)) + "…" : entry.key
            var names = entry.senders.prefix(10).map { $0 == me ? strings["chat_you"] : room.name(of: $0) }.joined(separator: ", ")
            if entry.senders.count > 10 { names = strings.text("chat_reacted_more", ["names": names, "count": String(entry.senders.count - 10)]) }
            return [
                "key": entry.key, "shown": shown, "count": entry.senders.count, "mine": entry.senders.contains(me),
                "label": strings.text("chat_reacted", ["names": names, "key": shown]),
            ]
        }
    }

    /// "Bob is typing…", "Bob and Olive are typing…", "Several people are typing…"; empty for nobody.
    static func typing(_ users: [String], room: Room, strings: StringsTable) -> String {
        switch users.count {
        case 0: ""
        case 1: strings.text("chat_typing_one", ["name": room.name(of: users[0])])
        case 2: strings.text("chat_typing_two", ["name": room.name(of: users[0]), "other": room.name(of: users[1])])
        default: strings["chat_typing_many"]
        }
    }

    /// Who has read the member's latest message (`RoomList.seen`): "Seen" in a direct chat, "Seen by 2" in a group,
    /// with their names; the line is empty when nobody has.
    static func seen(_ list: RoomList, room: Room, strings: StringsTable) -> [String: String] {
        guard let seen = list.seen(in: room.id), !seen.readers.isEmpty else { return ["line": "", "text": "", "names": ""] }
        let names = seen.readers.prefix(20).map { room.name(of: $0) }.joined(separator: ", ")
        let text = list.isDirect(room) && room.isOneToOne ? strings["chat_seen"] : strings.text("chat_seen_by", ["count": String(seen.readers.count)])
        return ["line": seen.line, "text": text, "names": strings.text("chat_seen_names", ["names": names])]
    }

    /// Where a link of a message takes the member (`AppCatalog.messageLink`).
    typealias MessageLinks = @Sendable (String) -> String

    /// A message's text as markup: the sender's formatted body through the allowlist, else the plain body with its
    /// links made links, each going where `links` says. (The template inserts it as markup: everything in it is
    /// `MessageMarkup`'s own.)
    static func markup(_ message: Message, links: MessageLinks) -> String {
        message.formattedBody.map { MessageMarkup.sanitized($0, route: links) } ?? MessageMarkup.plain(message.body, route: links)
    }

    /// A line as the live stream sends it, rendered by the one renderer of a line (`chat-message`): its id, the
    /// page's own id of a message it sent (`txn`), whether it is the member's, and its markup. A live edit is sent as
    /// the line it edits, whole, under that line's id (`replaces`: the page replaces it).
    static func liveLine(_ message: Message, room: Room, me: String, renderer: PageRenderer, links: MessageLinks) throws -> [String: Any] {
        var line = message
        if let original = message.replaces {
            guard var edited = room.recentLines.last(where: { $0.id == original }) else { return [:] }
            edited.body = message.body
            edited.formattedBody = message.formattedBody
            edited.isEdited = !message.isDeletion
            if message.isDeletion { edited.kind = .deleted }
            line = edited
        }
        var values: [String: Any] = [
            "id": line.id, "mine": line.sender == me,
            "html": try renderer.fragment(
                "chat-message",
                self.message(
                    line, room: room, me: me, strings: renderer.strings, links: links,
                    answering: line.replyTo.flatMap { id in room.recentLines.last { $0.id == id } },
                    reactions: room.reactions[line.id])),
        ]
        values["txn"] = message.transactionID
        values["replaces"] = message.replaces
        values["day"] = String(iso(line.timestamp).prefix(10))
        return values
    }

    /// A line's reactions as the live stream sends them: the line's id and its reactions rendered by the line's own
    /// partial (`chat-reactions`), for the page to put in place of the ones it shows.
    static func liveReactions(_ line: String, room: Room, me: String, renderer: PageRenderer) throws -> [String: Any] {
        let values: [String: Any] = ["id": line, "reactions": reactions(room.reactions[line], room: room, me: me, strings: renderer.strings)]
        return ["id": line, "html": try renderer.fragment("chat-reactions", values)]
    }

    /// "Bob joined", "Alice invited Carol", "Bob left"…
    static func line(_ message: Message, room: Room, strings: StringsTable) -> String {
        let target = message.target.map { room.name(of: $0) } ?? ""
        return strings.text("chat_member_\(message.membership ?? "join")", ["name": room.name(of: message.sender), "target": target])
    }

    /// "Alice named the group “Garden club”", "Alice set the topic to “…”", "Alice removed the topic", "Alice made Bob
    /// an admin", "Bob is no longer an admin".
    static func stateLine(_ message: Message, room: Room, strings: StringsTable) -> String {
        let value = message.value ?? ""
        let key = message.change == "topic" && value.isEmpty ? "chat_state_topic_removed" : "chat_state_\(message.change ?? "name")"
        return strings.text(
            key, ["name": room.name(of: message.sender), "target": message.target.map { room.name(of: $0) } ?? "", "value": Room.isolated(value)])
    }

    /// "Bob started a video call", "Missed call", "Call ended", "Call declined".
    static func callLine(_ message: Message, room: Room, strings: StringsTable) -> String {
        strings.text("chat_call_\(message.call ?? "ended")", ["name": room.name(of: message.sender)])
    }

    /// The room's page: its name, members, whether it is direct, encrypted elsewhere, or an invite.
    static func details(_ room: Room, in list: RoomList, strings: StringsTable) -> [String: Any] {
        let name = list.displayName(of: room)
        var values: [String: Any] = [
            "roomID": room.id, "roomName": name.isEmpty ? strings["chat_unnamed"] : name, "direct": list.isDirect(room),
            "encrypted": room.isEncrypted, "joined": room.membership == .joined, "invited": room.membership == .invited,
            "muted": list.mutedRooms.contains(room.id),
            "members": members(room, in: list, strings: strings),
        ]
        if room.membership == .invited { values["inviteText"] = summary(room, in: list, strings: strings)["inviteText"] }
        return values
    }

    /// The room's members (joined, then invited), each with what the member may do to them in a group: remove them,
    /// make them an admin (`PowerLevels`). A direct chat offers neither.
    static func members(_ room: Room, in list: RoomList, strings: StringsTable) -> [[String: Any]] {
        let levels = room.levels, me = list.me, group = !list.isDirect(room)
        let invited = room.members.filter { $0.value.membership == "invite" }.map(\.key).sorted()
        return (room.joinedMembers + invited).map { user in
            [
                "name": room.name(of: user), "id": user, "admin": levels.level(of: user) >= PowerLevels.admin,
                "invited": room.members[user]?.membership == "invite", "removable": group && user != me && levels.mayRemove(user, by: me),
                "promotable": group && user != me && room.members[user]?.membership == "join" && levels.mayMakeAdmin(user, by: me),
            ]
        }
    }

    /// The members the composer suggests after `@` (every one of the room's but the member, joined or invited): their
    /// ids and their names as the room shows them, as JSON for the page's script.
    static func mentionable(_ room: Room, me: String) -> String {
        let members = room.members.filter { $0.key != me && ["join", "invite"].contains($0.value.membership) }.keys.sorted().prefix(500)
        let list = members.map { ["id": $0, "name": room.shownName(of: $0)] }
        return (try? JSONSerialization.data(withJSONObject: list, options: [.sortedKeys])).map { String(decoding: $0, as: UTF8.self) } ?? "[]"
    }

    static func person(_ entry: DirectoryEntry) -> [String: Any] {
        var values: [String: Any] = ["username": entry.username, "initials": AppIcon.monogram(entry.displayName ?? entry.username)]
        values["displayName"] = entry.displayName
        values["chatUserID"] = entry.chatUserID
        return values
    }

    /// What the page's script needs: which room it shows, the member's own name there (their lines say it, as the
    /// server renders them), and its words.
    static func pageData(room: String?, strings: StringsTable) -> [String: Any] {
        var values: [String: Any] = [:]
        for key in ["chat_pending", "chat_sent", "chat_failed", "chat_retry", "chat_ended", "chat_new_messages", "chat_delete_confirm", "chat_save", "chat_send"] {
            values[key] = strings[key]
        }
        values["room"] = room
        return values
    }

    static func iso(_ milliseconds: Int) -> String {
        Date(timeIntervalSince1970: TimeInterval(milliseconds) / 1000).formatted(.iso8601)
    }

    /// `14:03` (UTC; the script shows the browser's own time).
    static func shownTime(_ milliseconds: Int) -> String {
        String(iso(milliseconds).dropFirst(11).prefix(5))
    }
}
