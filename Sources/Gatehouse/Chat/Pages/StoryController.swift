import Foundation
import GatehouseCore
import GatehouseMatrix
import Hummingbird

/// Stories (`/stories`), on the member's Matrix session that the gateway holds: a short text a registered member
/// posts for the people they have a direct chat with, shown for `chat.stories.lifetime_hours` (a day), then redacted
/// (`StoryReaper`). Each member's stories live in a story room of their own (type `org.gatehouse.stories`, made at
/// their first story, where only they may post), to which the gateway invites their direct chats' people and which
/// it joins for a member who opens Stories and was invited by one of theirs. Stories lists the people with new
/// stories first; opening one marks it seen (`org.gatehouse.story.seen`), and its author sees who saw it. Never a
/// member at `sso`'s: the portal's onboarding prompt answers them.
struct StoryController: Sendable {
    let chat: ChatFeature
    /// How long a story is shown.
    let lifetime: TimeInterval
    /// The clock stories are shown by (a test's own).
    let now: @Sendable () -> Date

    var chats: ChatSessions { chat.chats }
    var renderer: PageRenderer { chat.renderer }

    func addRoutes(to group: RouterGroup<SignedInRequestContext>) {
        let (pages, actions) = chat.routes(.stories, on: group)
        pages.get(RouterPath(stringLiteral: Paths.stories)) { request, context in try await list(request, context) }
        pages.get(RouterPath(stringLiteral: Paths.storyView)) { request, context in try await view(request, context) }
        actions.post(RouterPath(stringLiteral: Paths.storyPost)) { request, context in try await post(request, context) }
        actions.post(RouterPath(stringLiteral: Paths.storySeen)) { request, context in try await seen(request, context) }
        actions.post(RouterPath(stringLiteral: Paths.storyOpen)) { request, context in try await open(request, context) }
    }

    // MARK: - Pages

    /// The member's own stories with who saw them, a form to post one, and the people with stories, new ones first.
    func list(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        try await listPage(context, notice: request.uri.queryParameters.get("done") == "posted" ? renderer.strings["stories_posted"] : nil)
    }

    func listPage(_ context: SignedInRequestContext, notice: String? = nil, entry: String = "", error: String? = nil) async throws -> Response {
        let loop = try await chat.loop(context.session)
        let rooms = try await chat.current(loop)
        let strings = renderer.strings
        var mine: [[String: Any]] = []
        var people: [(new: Bool, latest: Int, values: [String: Any])] = []
        for room in rooms.storyRooms where room.membership == .joined {
            let book = try await book(room, loop)
            if room.creator == rooms.me {
                mine += book.live.reversed().map { story in
                    let viewers = story.seenBy.map { rooms.displayName(ofUser: $0, in: room) }.sorted()
                    return [
                        "body": story.body, "at": ChatViews.iso(story.timestamp), "shownAt": ChatViews.shownTime(story.timestamp),
                        "viewers": viewers.joined(separator: ", "), "hasViewers": !viewers.isEmpty,
                        "seenCount": strings.text("stories_seen_by", ["count": String(viewers.count)]),
                    ]
                }
            } else if let author = room.creator, let latest = book.live.last {
                let name = rooms.displayName(ofUser: author, in: room)
                let new = book.hasNew(for: rooms.me)
                people.append(
                    (
                        new, latest.timestamp,
                        [
                            "room": room.id, "name": name, "initials": AppIcon.monogram(name), "tone": AppIcon.tone(of: room.id), "new": new,
                            "href": FormEncoding.url(Paths.storyView, adding: [("room", room.id)]), "at": ChatViews.iso(latest.timestamp),
                            "what": strings.text(new ? "stories_new" : "stories_seen", ["count": String(book.live.count)]),
                        ]
                    ))
            }
        }
        // The story rooms of the member's direct chats' people that invited them and are not joined yet: new stories,
        // opened (joined) by the member's own form, never by this page's GET.
        for room in invitedStories(rooms) {
            guard let author = room.creator else { continue }
            let name = rooms.displayName(ofUser: author, in: room)
            people.append(
                (
                    true, room.lastActivity,
                    [
                        "room": room.id, "name": name, "initials": AppIcon.monogram(name), "tone": AppIcon.tone(of: room.id), "new": true,
                        "invited": true, "what": strings["stories_invited"],
                    ]
                ))
        }
        people.sort { $0.new != $1.new ? $0.new : $0.latest > $1.latest }
        return try renderer.page(
            "stories", title: strings["feature_stories_title"], status: error == nil ? .ok : .unprocessableContent,
            try await chat.portal.values(.stories, context.session) { values in
                values["mine"] = mine
                values["hasMine"] = !mine.isEmpty
                values["people"] = people.map(\.values)
                values["hasPeople"] = !people.isEmpty
                values["notice"] = notice
                values["storyText"] = entry
                values["storyError"] = error
                if error != nil { values["formPage"] = Paths.stories }
                values["storyLimit"] = Story.textLimit
                values["lifetimeHours"] = strings.text("stories_intro", ["hours": String(Int(lifetime / 3600))])
            })
    }

    static let formLimit = 256 * 1024

    /// Posts a story: the member's story room made at their first, and everyone they have a direct chat with invited.
    func post(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        // Room for a story far over its limit (each byte of it encoded as `%XX`), so that it comes back whole to shorten.
        let form = try await FormPost.read(request, session: context.session, publicOrigin: chat.publicOrigin, limit: Self.formLimit)
        let text = (form["text"] ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        guard (1...Story.textLimit).contains(text.count) else {
            return try await listPage(context, entry: text, error: renderer.strings.text("stories_error_length", ["limit": String(Story.textLimit)]))
        }
        let loop = try await chat.loop(context.session)
        let rooms = try await chat.current(loop)
        let partners = Set(rooms.ordered.filter { $0.membership == .joined && rooms.isDirect($0) && $0.isOneToOne }.compactMap { rooms.peer(in: $0) })
        let room: String
        if let own = rooms.storyRooms.first(where: { $0.creator == rooms.me && $0.membership == .joined }) {
            room = own.id
            for partner in partners.subtracting(own.members.filter { ["join", "invite"].contains($0.value.membership) }.keys) {
                try? await chats.matrix(loop).invite(room: room, user: partner)
            }
        } else {
            room = try await chats.matrix(loop).createStoryRoom(invite: partners.sorted())
        }
        _ = try await chats.matrix(loop).send(room: room, type: Story.eventType, content: .object(["msgtype": .string("m.text"), "body": .string(text)]),
                transactionID: RandomToken.make())
        _ = try? await loop.refresh()
        return ChatFeature.redirect(Paths.stories + "?done=posted")
    }

    /// One person's live stories, oldest first; the page's script marks them seen once the member sees them.
    func view(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        let roomID = try ChatFeature.roomID(request.uri.queryParameters.get("room"))
        let loop = try await chat.loop(context.session)
        let rooms = try await chat.current(loop)
        guard let room = rooms.rooms[roomID], room.isStories, room.membership == .joined, let author = room.creator else { throw ChatError.notInRoom }
        let book = try await book(room, loop)
        let name = rooms.displayName(ofUser: author, in: room)
        let strings = renderer.strings
        return try renderer.page(
            "story-view", title: strings.text("stories_of", ["name": name]),
            try await chat.portal.values(.stories, context.session) { values in
                values["authorName"] = name
                values["heading"] = strings.text("stories_of", ["name": name])
                values["stories"] = book.live.map { story in
                    ["id": story.id, "body": story.body, "at": ChatViews.iso(story.timestamp), "shownAt": ChatViews.shownTime(story.timestamp)]
                }
                values["hasStories"] = !book.live.isEmpty
                values["room"] = room.id
                values["unseen"] = author != rooms.me && book.live.contains { !$0.seenBy.contains(rooms.me) }
            })
    }

    /// Marks a room's live stories seen by the member (the view's script, once they are on screen).
    func seen(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        let (roomID, loop, rooms) = try await formRoom(request, context)
        guard let room = rooms.rooms[roomID], room.isStories, room.membership == .joined, let author = room.creator else { throw ChatError.notInRoom }
        var marked = 0
        for story in try await book(room, loop).live where author != rooms.me && !story.seenBy.contains(rooms.me) {
            let content: JSONValue = .object(["m.relates_to": .object(["rel_type": .string("m.reference"), "event_id": .string(story.id)])])
            _ = try await chats.matrix(loop).send(room: room.id, type: Story.seenType, content: content, transactionID: RandomToken.make())
            marked += 1
        }
        return try JSONResponse.make(["seen": marked])
    }

    // MARK: - Helpers

    /// A story form's room (origin and CSRF token checked), the member's loop and rooms.
    func formRoom(_ request: Request, _ context: SignedInRequestContext) async throws -> (String, SyncLoop, RoomList) {
        let form = try await FormPost.read(request, session: context.session, publicOrigin: chat.publicOrigin)
        let roomID = try ChatFeature.roomID(form["room"])
        let loop = try await chat.loop(context.session)
        return (roomID, loop, try await chat.current(loop))
    }

    /// The story rooms the member's direct chats' people invited them to, their own (an invite from anyone else stays
    /// unanswered: no one makes a member see what they did not choose).
    func invitedStories(_ rooms: RoomList) -> [Room] {
        rooms.storyRooms.filter { room in
            room.membership == .invited && room.inviter.map { rooms.directRoom(with: $0) != nil } == true && room.inviter == room.creator
        }
    }

    /// Opens a person's stories the member was invited to (`room`, one of `invitedStories`): joins their story room,
    /// then shows them. A form of the Stories page: a page's GET joins nothing.
    func open(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        let (roomID, loop, rooms) = try await formRoom(request, context)
        if rooms.rooms[roomID]?.membership != .joined {
            guard invitedStories(rooms).contains(where: { $0.id == roomID }) else { throw ChatError.notInRoom }
            try await chats.matrix(loop).join(room: roomID)
            _ = try? await loop.refresh()
        }
        return ChatFeature.redirect(FormEncoding.url(Paths.storyView, adding: [("room", roomID)]))
    }

    func book(_ room: Room, _ loop: SyncLoop) async throws -> StoryBook {
        let page = try await chats.matrix(loop).messages(room: room.id, from: nil, limit: 200, types: [Story.eventType, Story.seenType])
        return StoryBook(room: room, events: page.events, now: Int(now().timeIntervalSince1970 * 1000), lifetime: Int(lifetime * 1000))
    }
}
