import Foundation
import GatehouseCore
import GatehouseMatrix
import GatehouseStorage
import Hummingbird

/// The gateway's own chat (`/chats`), on the member's Matrix session that the gateway holds (`ChatSessions`): the
/// room list with invites, a room's timeline and composer, starting a direct chat or a group, live through one
/// event stream per page. Server-rendered, with `gatehouse-chat.js` for what changes without a reload; every form
/// works without it. A member who may not chat gets the portal's Chats page (the onboarding prompt at `sso`).
struct ChatController: Sendable {
    let chat: ChatFeature
    /// What every page of the member's hears (`Paths.live`).
    let live: LiveFeed
    /// Web Push, when the gateway sends it: the Chats page offers it.
    let push: ChatPush?

    var chats: ChatSessions { chat.chats }
    var portal: any FeatureChrome { chat.portal }
    var renderer: PageRenderer { chat.renderer }

    func addRoutes(to group: RouterGroup<SignedInRequestContext>) {
        let (pages, actions) = chat.routes(.chats, on: group)
        pages.get(RouterPath(stringLiteral: Paths.chats)) { request, context in try await list(request, context) }
        pages.get(RouterPath(stringLiteral: Paths.chatRoom)) { request, context in try await room(request, context) }
        pages.get(RouterPath(stringLiteral: Paths.chatNew)) { request, context in try await newChat(request, context) }
        actions.get(RouterPath(stringLiteral: Paths.chatHistory)) { request, context in try await history(request, context) }
        actions.get(RouterPath(stringLiteral: Paths.chatNotice)) { request, context in try await notice(request, context) }
        actions.get(RouterPath(stringLiteral: Paths.chatEvents)) { request, context in try await events(request, context) }
        actions.post(RouterPath(stringLiteral: Paths.chatSend)) { request, context in try await send(request, context) }
        actions.post(RouterPath(stringLiteral: Paths.chatRead)) { request, context in try await markRead(request, context) }
        actions.post(RouterPath(stringLiteral: Paths.chatEdit)) { request, context in try await edit(request, context) }
        actions.post(RouterPath(stringLiteral: Paths.chatDelete)) { request, context in try await delete(request, context) }
        actions.post(RouterPath(stringLiteral: Paths.chatMembership)) { request, context in try await membership(request, context) }
        actions.post(RouterPath(stringLiteral: Paths.chatDirect)) { request, context in try await direct(request, context) }
        actions.post(RouterPath(stringLiteral: Paths.chatGroup)) { request, context in try await newGroup(request, context) }
        actions.post(RouterPath(stringLiteral: Paths.chatMute)) { request, context in try await mute(request, context) }
        actions.post(RouterPath(stringLiteral: Paths.chatReact)) { request, context in try await react(request, context) }
        actions.post(RouterPath(stringLiteral: Paths.chatTyping)) { request, context in try await typing(request, context) }
        actions.post(RouterPath(stringLiteral: Paths.chatManage)) { request, context in try await manage(request, context) }
        actions.get(RouterPath(stringLiteral: Paths.live)) { _, context in try await live.stream(context.session, onGateway: true) }
        // The count answers every member (no chat: `{"chat": false}`), behind no gate.
        group.get(RouterPath(stringLiteral: Paths.chatUnread)) { _, context in try await unread(context) }
    }

    // MARK: - Pages

    /// The room list: invites first, then the rooms by their latest message.
    func list(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        let rooms = try await chat.roomList(context.session)
        // Pushes with no page open: the key the browser subscribes with, and what holds for this session now.
        let kept = try await push?.current(context.session)
        let pushValues: [String: Any]? = push.map {
            ["key": $0.vapid.publicKey, "on": kept != nil, "previews": kept?.previews == true, "worker": Paths.pushWorker, "scope": Paths.pushWorkerScope]
        }
        let strings = renderer.strings
        let title = strings["feature_chats_title"]
        return try renderer.page(
            "chats", title: title,
            try await portal.values(.chats, context.session) { values in
                values["rooms"] = rooms.ordered.map { ChatViews.summary($0, in: rooms, strings: strings) }
                values["hasRooms"] = !rooms.rooms.isEmpty
                values["chatData"] = ChatViews.pageData(room: nil, strings: strings)
                values["notice"] = Self.notice(request, strings: strings)
                values["push"] = pushValues
            })
    }

    /// One room: its latest messages, the composer, its members and the note on encryption.
    func room(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        let query = ChatFeature.query(request)
        return try await roomPage(
            try ChatFeature.roomID(query["id"]), notice: Self.notice(request, strings: renderer.strings), find: query["find"],
            at: query["at"].flatMap { ChatFeature.isEventID($0) ? $0 : nil }, context)
    }

    /// The reactions a line offers at a click, as other chats do; any other is typed.
    static let quickReactions = ["👍", "❤️", "😂", "😮", "😢", "🎉"]

    /// A message the composer could not send, as the member wrote it, and why: shown again in the composer.
    struct Draft {
        var text: String
        var error: String
    }

    func roomPage(
        _ roomID: String, notice: String?, draft: Draft? = nil, find: String? = nil, at: String? = nil, status: HTTPResponse.Status? = nil,
        _ context: SignedInRequestContext
    ) async throws -> Response {
        let loop = try await chat.loop(context.session)
        let rooms = try await chat.current(loop)
        guard let room = rooms.rooms[roomID] else { throw ChatError.notInRoom }
        let strings = renderer.strings
        var values: [String: Any] = [:]
        if room.membership == .joined {
            let messages: [[String: Any]]
            if let at {
                // Opened at a message (a search's result): the lines around it, and a way to the latest.
                let window = try await lines(around: at, in: roomID, loop)
                messages = ChatViews.timeline(window.events, room: room, me: rooms.me, strings: strings, links: chat.links)
                values["older"] = window.start
                values["at"] = at
                values["latest"] = FormEncoding.url(Paths.chatRoom, adding: [("id", roomID)])
            } else {
                let page = try await chats.matrix(loop).messages(room: roomID, from: nil, limit: 40)
                // The page opens at the first line the member has not read (`firstNew`), as far as their receipt says.
                messages = ChatViews.timeline(
                    page.events.reversed(), room: room, me: rooms.me, strings: strings, links: chat.links, readUpTo: rooms.receipts[roomID]?[rooms.me],
                    unread: room.unread)
                values["older"] = page.end
            }
            values["messages"] = messages
            values["hasMessages"] = !messages.isEmpty
            values["searchRoom"] = ["room": roomID, "query": ""]
            values["seen"] = ChatViews.seen(rooms, room: room, strings: strings)
            values["typingText"] = ChatViews.typing(rooms.typing[roomID] ?? [], room: room, strings: strings)
            values["quickReactions"] = Self.quickReactions.map { ["key": $0] }
            values["mentionable"] = ChatViews.mentionable(room, me: rooms.me)
            if !rooms.isDirect(room) { values["manage"] = try await manageValues(room, in: rooms, find: find) }
            // (Read markers are the page's script's to send, as the member sees the lines: a GET changes nothing.)
        }
        let name = rooms.displayName(of: room)
        values["callable"] = room.membership == .joined && room.isOneToOne && rooms.peer(in: room) != nil && chat.allows(.calls, context.session)
        values["messageLimit"] = Self.messageLimit
        values["pendingLine"] = ["kind": "text", "mine": true, "senderName": rooms.displayName(ofUser: rooms.me, in: room), "hasBody": true, "body": "", "at": ""]
        values["draft"] = draft?.text
        values["composerError"] = draft?.error
        if draft != nil { values["formPage"] = FormEncoding.url(Paths.chatRoom, adding: [("id", roomID)]) }
        return try renderer.page(
            "chat-room", title: name.isEmpty ? strings["chat_unnamed"] : name, status: status ?? (draft == nil ? .ok : .unprocessableContent),
            try await portal.values(.chats, context.session) { page in
                page.merge(values) { _, new in new }
                page.merge(ChatViews.details(room, in: rooms, strings: strings)) { _, new in new }
                page["chatData"] = ChatViews.pageData(room: room.id, strings: strings)
                page["notice"] = notice
            })
    }

    /// A room's lines around one of its events; an event it does not have (or shows the member) is the link's mistake.
    private func lines(around event: String, in room: String, _ loop: SyncLoop) async throws -> (events: [MatrixEvent], start: String?) {
        do {
            return try await chats.matrix(loop).context(room: room, event: event, limit: 30)
        } catch .refused(404, _, _) {
            throw ChatError.invalidMessage("no such event")
        }
    }

    /// What the member may change of a group (`PowerLevels`), and the people found to add (`find`: the same search as
    /// a new chat's, those in the room already left out).
    func manageValues(_ room: Room, in list: RoomList, find: String?) async throws -> [String: Any] {
        let levels = room.levels, me = list.me, strings = renderer.strings
        var values: [String: Any] = [
            "mayRename": levels.maySet("m.room.name", by: me), "mayTopic": levels.maySet("m.room.topic", by: me),
            "mayInvite": levels.mayInvite(me), "name": room.name ?? "", "topic": room.topic ?? "", "hasTopic": !(room.topic ?? "").isEmpty,
        ]
        let text = String((find ?? "").trimmingCharacters(in: .whitespaces).prefix(100))
        if levels.mayInvite(me), !text.isEmpty {
            let found = try await chat.registrations.directory(search: text, limit: 20).filter { entry in
                guard let user = entry.chatUserID else { return false }
                return user != me && !["join", "invite"].contains(room.members[user]?.membership)
            }
            values["find"] = text
            values["searched"] = true
            values["found"] = found.map { ChatViews.person($0) }
            values["hasFound"] = !found.isEmpty
            values["noneFound"] = found.isEmpty ? strings.text("chat_search_none", ["query": text]) : nil
        }
        return values
    }

    /// Older messages of a room, for the timeline scrolled to its top (JSON).
    func history(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        try GatewayPageIsolation.checkPageToken(request, session: context.session)
        let query = request.uri.queryParameters
        let roomID = try ChatFeature.roomID(query.get("id"))
        let (loop, rooms, room) = try await chat.joined(roomID, context.session)
        let page = try await chats.matrix(loop).messages(room: roomID, from: query.get("from"), limit: 40)
        // The lines as the page shows them (`chat-lines`), oldest first, with the days they start.
        let lines = try ChatViews.timeline(page.events.reversed(), room: room, me: rooms.me, strings: renderer.strings, links: chat.links).map {
            try renderer.fragment("chat-lines", $0)
        }
        return try JSONResponse.make(["html": lines.joined(), "older": page.end as Any])
    }

    /// Find a member to chat with, and make a group.
    func newChat(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        return try await newChatPage(ChatFeature.query(request)["q"] ?? "", notice: Self.notice(request, strings: renderer.strings), context)
    }

    /// A group the member asked for, as entered, and what is wrong with it: shown again on the page.
    struct GroupEntry {
        var name: String
        var members: String
        var error: String
    }

    func newChatPage(_ query: String, notice: String? = nil, group: GroupEntry? = nil, _ context: SignedInRequestContext) async throws -> Response {
        let strings = renderer.strings
        let text = String(query.trimmingCharacters(in: .whitespaces).prefix(100))
        let found = text.isEmpty ? [] : try await chat.registrations.directory(search: text, limit: 20)
        let me = context.session.identity.sub
        let people = found.filter { $0.sub != me && $0.chatUserID != nil }
        return try renderer.page(
            "chat-new", title: strings["chat_new_title"], status: group == nil ? .ok : .unprocessableContent,
            try await portal.values(.chats, context.session) { values in
                values["query"] = text
                values["searched"] = !text.isEmpty
                values["people"] = people.map { ChatViews.person($0) }
                values["hasPeople"] = !people.isEmpty
                values["noneFound"] = !text.isEmpty && people.isEmpty ? strings.text("chat_search_none", ["query": text]) : nil
                values["notice"] = notice
                values["groupName"] = group?.name
                values["groupMembers"] = group?.members
                values["groupError"] = group?.error
                if group != nil { values["formPage"] = Paths.chatNew }
            })
    }

    /// The tabs' and the bar's count: unread messages over the member's rooms (JSON). Asking is no activity of the
    /// member's (`SessionMiddleware`); it keeps the sync loop up a minute.
    func unread(_ context: SignedInRequestContext) async throws -> Response {
        try Self.unreadAnswer(await chats.unread(for: context.session))
    }

    /// `{"unread": 3, "chat": true}`, or `{"unread": 0, "chat": false}` for a member with no chat; also what an app
    /// host's bar is told (`HostMountController`).
    static func unreadAnswer(_ count: Int?) throws -> Response {
        try JSONResponse.make(["unread": count ?? 0, "chat": count != nil])
    }

    // MARK: - Helpers

    /// What the last action did, from the redirect's `done=`.
    static func notice(_ request: Request, strings: StringsTable) -> String? {
        let known = ["left", "declined", "joined", "group", "renamed", "topic", "added", "removed", "admin"]
        guard let done = request.uri.queryParameters.get("done"), known.contains(done) else { return nil }
        return strings["chat_done_\(done)"]
    }
}
