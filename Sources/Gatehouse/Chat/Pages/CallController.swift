import Foundation
import GatehouseCore
import GatehouseMatrix
import GatehouseStorage
import HTTPTypes
import Hummingbird

/// The gateway's own one-to-one calls (`/calls`), on the member's Matrix session that the gateway holds: the
/// signalling is Matrix VoIP (`m.call.*`) in the direct chat, sent and received by the gateway for the page
/// (`CallSignalling` checks both ways), the media browser to browser (WebRTC, through the homeserver's TURN server).
/// Calls lists the member's recent calls and starts one with a person from their direct chats or the directory; a
/// call's page is the only gateway page the browser lets use the camera and microphone. A member who may not call
/// gets the portal's Calls page (the onboarding prompt at `sso`).
struct CallController: Sendable {
    let chat: ChatFeature
    let live: LiveFeed
    let signalling: CallSignalling
    /// Whether the page must relay all media through TURN (`chat.calls.relay_only`).
    let relayOnly: Bool

    var chats: ChatSessions { chat.chats }
    var renderer: PageRenderer { chat.renderer }

    func addRoutes(to group: RouterGroup<SignedInRequestContext>) {
        let (pages, actions) = chat.routes(.calls, on: group)
        pages.get(RouterPath(stringLiteral: Paths.calls)) { request, context in try await list(request, context) }
        pages.get(RouterPath(stringLiteral: Paths.callPage)) { request, context in try await callPage(request, context) }
        actions.post(RouterPath(stringLiteral: Paths.callStart)) { request, context in try await start(request, context) }
        actions.get(RouterPath(stringLiteral: Paths.callServers)) { request, context in try await servers(request, context) }
        actions.post(RouterPath(stringLiteral: Paths.callSignal)) { request, context in try await signal(request, context) }
        actions.get(RouterPath(stringLiteral: Paths.callEvents)) { request, context in try await events(request, context) }
        actions.post(RouterPath(stringLiteral: Paths.live)) { request, context in try await live.decline(request, context.session) }
    }

    // MARK: - Pages

    /// Recent calls (missed ones marked), the people of the member's direct chats to call, and a search.
    func list(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        let rooms = try await chat.roomList(context.session)
        let strings = renderer.strings
        let now = Self.now()
        let query = String((request.uri.queryParameters.get("q") ?? "").trimmingCharacters(in: .whitespaces).prefix(100))
        let found = query.isEmpty ? [] : try await chat.registrations.directory(search: query, limit: 20)
        let people = found.filter { $0.sub != context.session.identity.sub && $0.chatUserID != nil }
        let recent = rooms.calls.ordered.prefix(30).compactMap { call in CallViews.recent(call, in: rooms, now: now, strings: strings) }
        let contacts = rooms.ordered.filter { $0.membership == .joined && rooms.isDirect($0) && $0.isOneToOne }.compactMap { room -> [String: Any]? in
            guard rooms.peer(in: room) != nil else { return nil }
            let name = rooms.displayName(of: room)
            return ["room": room.id, "name": name, "initials": AppIcon.monogram(name), "tone": AppIcon.tone(of: room.id)]
        }
        return try renderer.page(
            "calls", title: strings["feature_calls_title"],
            try await chat.portal.values(.calls, context.session) { values in
                values["recent"] = recent
                values["hasRecent"] = !recent.isEmpty
                values["contacts"] = contacts
                values["hasContacts"] = !contacts.isEmpty
                values["query"] = query
                values["searched"] = !query.isEmpty
                values["people"] = people.map { ChatViews.person($0) }
                values["noneFound"] = !query.isEmpty && people.isEmpty ? strings.text("chat_search_none", ["query": query]) : nil
            })
    }

    /// Starts a call: with the person of a direct chat (`room`) or a member found by username (their direct chat
    /// made the first time), audio or video; the call's page places it, with the grant only this form gives.
    func start(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        let form = try await FormPost.read(request, session: context.session, publicOrigin: chat.publicOrigin)
        guard let media = form["media"].flatMap(Call.Media.init(rawValue:)) else { throw RequestError.badRequest("media: audio or video") }
        let room: String
        if let given = form["room"] {
            room = try ChatFeature.roomID(given)
        } else {
            room = try await chat.directRoom(withUsername: form["username"], context.session)
        }
        let grant = CallPlacement.grant(room: room, media: media, key: context.session.csrfToken, now: Date())
        return ChatFeature.redirect(FormEncoding.url(Paths.callPage, adding: [("room", room), ("media", media.rawValue), ("place", grant)]))
    }

    /// A call's page: placing a call (`?room=…&media=video&place=<grant>`) or answering one that rings (`?id=<call id>`).
    /// Without a good grant the page only offers the call (its button is the form that makes one). The page's script
    /// does the rest; without it the page says that calls need JavaScript.
    func callPage(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        let query = request.uri.queryParameters
        let loop = try await chat.loop(context.session)
        let rooms = try await chat.current(loop)
        let strings = renderer.strings
        var values: [String: Any] = ["party": loop.credentials.deviceID]
        let room: Room
        if let callID = query.get("id") {
            guard CallSignalling.isCallID(callID), let call = rooms.calls.calls[callID], let callRoom = rooms.rooms[call.room] else {
                throw ChatError.notInRoom
            }
            room = callRoom
            values["direction"] = "in"
            values["callID"] = call.id
            values["media"] = call.media.rawValue
            values["callerParty"] = call.callerParty
            values["offer"] = signalling.forPage(sdp: call.offer)
            values["candidates"] = CallViews.json(signalling.allowedCandidates(call.candidates[call.callerParty ?? call.caller] ?? []))
            // Answered elsewhere, ended or missed by now: the page says so and offers to call back.
            let now = Self.now()
            if call.caller == rooms.me || call.phase(at: now) != .ringing { values["over"] = CallViews.phaseText(call, me: rooms.me, now: now, strings: strings) }
        } else {
            let roomID = try ChatFeature.roomID(query.get("room"))
            guard let callRoom = rooms.rooms[roomID], callRoom.membership == .joined else { throw ChatError.notInRoom }
            room = callRoom
            let media = query.get("media").flatMap(Call.Media.init(rawValue:)) ?? .audio
            values["direction"] = "out"
            values["media"] = media.rawValue
            values["place"] = CallPlacement.allows(query.get("place"), room: roomID, media: media, key: context.session.csrfToken, now: Date())
        }
        guard room.isOneToOne, let peer = rooms.peer(in: room) else { throw ChatError.notInRoom }
        let name = room.name(of: peer)
        values["room"] = room.id
        values["peerName"] = name
        values["peerInitials"] = AppIcon.monogram(name)
        values["tone"] = AppIcon.tone(of: room.id)
        values["words"] = CallViews.words(strings)
        let media = values["media"] as? String ?? "audio"
        // The seeds' choice: an audio call sounds through the earpiece (a phone's), a video call through the speaker.
        values["outputText"] = strings["call_output_\(media)"]
        values["permissionText"] = strings["call_permission_\(media)"]
        values["video"] = media == "video"
        // Asked for without the form's grant: the call is offered, not placed.
        if values["direction"] as? String == "out", values["place"] as? Bool != true {
            values["offered"] = true
            values["offerText"] = strings.text("call_offer_\(media)", ["name": name])
        }
        var response = try renderer.page(
            "call", title: strings.text("call_title_\(media)", ["name": name]),
            try await chat.portal.values(.calls, context.session) { page in
                page.merge(values) { _, new in new }
                page["callHeading"] = strings.text("call_title_\(media)", ["name": name])
            })
        // The one gateway page that may use the camera and the microphone.
        response.headers[SecurityHeaders.permissionsPolicy] = PermissionsPolicy.header(allowing: ["camera", "microphone"])
        return response
    }

    /// Milliseconds since 1970, as the homeserver stamps events.
    static func now() -> Int { Int(Date().timeIntervalSince1970 * 1000) }
}

extension RoomList {
    /// The other member of a room of two (joined or invited).
    func peer(in room: Room) -> String? {
        room.members.first { $0.key != me && ($0.value.membership == "join" || $0.value.membership == "invite") }?.key
    }
}
