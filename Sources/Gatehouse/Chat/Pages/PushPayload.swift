import Foundation
import GatehouseCore
import GatehouseMatrix

/// What the service worker shows for one of the homeserver's pushes (`/_matrix/push/v1/notify`'s `notification`):
/// the same title as a gateway page's notification, the message's text only where the member allows previews, and
/// the room (or the call) it opens. `nil` for what tells the member nothing (a count alone, an event of another kind).
enum PushPayload {
    /// What a notification carries: its words, what opens at a click, and its tag (the event's, or the call's, as a
    /// gateway page's notification has: one replaces the other rather than stand beside it).
    struct Shown: Sendable, Equatable, Encodable {
        var kind: String
        var title: String
        var body: String
        var url: String
        var tag: String
        var lang: String
    }

    /// The longest title and text sent: what a notification shows anyway, and far inside one push record.
    static let titleLimit = 120
    static let textLimit = 140

    static func make(_ notification: JSONValue, previews: Bool, strings: StringsTable, language: String, base: String) -> Shown? {
        guard let eventID = notification["event_id"]?.string, ChatFeature.isEventID(eventID), let roomID = try? ChatFeature.roomID(notification["room_id"]?.string)
        else { return nil }
        let sender = notification["sender"]?.string ?? ""
        let name = clipped(notification["sender_display_name"]?.string ?? localpart(sender), titleLimit)
        let roomName = notification["room_name"]?.string.map { clipped($0, titleLimit) }
        // A room named after the sender (a direct chat: the homeserver names it after the other member) is theirs.
        let isGroup = roomName != nil && roomName != name
        let content = notification["content"]
        let room = base + FormEncoding.url(Paths.chatRoom, adding: [("id", roomID)])
        func shown(_ kind: String, _ title: String, _ body: String, url: String = room, tag: String = eventID) -> Shown {
            Shown(kind: kind, title: clipped(title, titleLimit), body: body, url: url, tag: tag, lang: language)
        }
        switch notification["type"]?.string {
        case "m.room.message":
            let mention = notification["devices"]?.array?.first?["tweaks"]?["highlight"]?.bool == true
            let key = (mention ? "notify_mention" : "notify_message") + (isGroup ? "_group" : "")
            let title = strings.text(key, ["name": name, "room": roomName ?? ""])
            var text = strings["notify_message_body"]
            if previews, let body = content?["body"]?.string, !body.isEmpty {
                text = content?["msgtype"]?.string == "m.emote" ? "* \(name) " + clipped(body, textLimit) : clipped(body, textLimit)
            }
            return shown(mention ? "mention" : "message", title, text)
        case "m.call.invite":
            guard let callID = content?["call_id"]?.string, CallSignalling.isCallID(callID) else { return nil }
            let video = content?["offer"]?["sdp"]?.string.map { $0.contains("\nm=video") || $0.hasPrefix("m=video") } == true
            let url = base + FormEncoding.url(Paths.callPage, adding: [("id", callID)])
            return shown("call", strings["ring_label"], strings.text(video ? "ring_video" : "ring_audio", ["name": name]), url: url, tag: callID)
        case "m.room.member":
            guard notification["membership"]?.string == "invite", notification["user_is_target"]?.bool == true else { return nil }
            let direct = content?["is_direct"]?.bool == true
            return shown("invite", name, strings.text(direct ? "chat_invite_direct" : "chat_invite_group", ["name": name]), tag: roomID)
        default:
            return nil
        }
    }

    /// `@alice.c5:chat.test` → `alice.c5`: the name when the homeserver sent none.
    static func localpart(_ userID: String) -> String {
        String(userID.dropFirst().prefix { $0 != ":" })
    }

    /// The first `limit` characters, an ellipsis after them when there were more, on one line.
    static func clipped(_ text: String, _ limit: Int) -> String {
        let line = text.replacingOccurrences(of: "\n", with: " ")
        return line.count > limit ? String(line.prefix(limit)) + "…" : line
    }
}
