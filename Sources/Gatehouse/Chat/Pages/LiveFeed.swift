import Foundation
import GatehouseCore
import GatehouseMatrix
import Hummingbird
import NIOConcurrencyHelpers

/// What every page of a member's hears (`Paths.live`), on the gateway's host and on every app host
/// (`HostMountController`), so that the bar on any app's page hears it too: the unread count (`unread`), what to
/// tell the member of (`notify`: a message of another's in a room not muted, an invite) and the calls ringing for
/// them (`ringing`, when calls are theirs). The pages' script (`gatehouse-live.js`) lets one tab of each origin hold
/// the stream and tells the others, so a browser with ten tabs open holds one stream per origin, not ten.
///
/// A session's browser can still hold several (the gateway's host and an app host's tabs): the gateway tells only
/// one of them to notify (`LiveStreams.notifies`), the gateway's host's if one is open (its tabs are where a room can
/// be in view), else the newest, so that a message makes one notification, not one per origin.
struct LiveFeed: Sendable {
    let chats: ChatSessions
    let features: FeaturesConfiguration
    let renderer: PageRenderer
    let publicOrigin: String
    let draining: Draining
    var streams: LiveStreams { chats.streams }

    /// Whether the member may call: registered with a chat account, and both Chats and Calls theirs.
    func mayCall(_ session: Session) -> Bool { ChatFeature.allows(.calls, session, chats: chats, features: features) }

    /// The stream: at once the count (and the ringing calls), then each change of them and each thing to notify.
    /// `onGateway`: asked on the gateway's host (else an app host's).
    func stream(_ session: Session, onGateway: Bool) async throws -> Response {
        guard ChatFeature.allows(.chats, session, chats: chats, features: features) else { throw ChatError.notAllowed }
        let loop = try await chats.loop(for: session)
        let rooms = try await chats.current(loop)
        let strings = renderer.strings
        let base = publicOrigin
        let party = loop.credentials.deviceID
        let ringing = mayCall(session)
        let language = RequestLanguage.current
        let ticket = streams.open(session: session.id, onGateway: onGateway)
        let told = NIOLockedValueBox(rooms.unreadTotal)
        var first = LiveStream.event("unread", ["unread": rooms.unreadTotal])
        if ringing { first += CallViews.ringing(rooms, party: party, base: base, strings: strings) }
        return await LiveStream.response(
            loop: loop, draining: draining, first: first, ended: { [streams] in streams.close(ticket) }, poked: { streams.setPoke(ticket, $0) }
        ) { [streams] changes, list in
            RequestLanguage.$current.withValue(language) {
                var text = ""
                let unread = list.unreadTotal
                let changed = told.withLockedValue { told in
                    defer { told = unread }
                    return told != unread
                }
                if changed { text += LiveStream.event("unread", ["unread": unread]) }
                if streams.notifies(ticket) {
                    for notice in ChatViews.notices(changes, list, base: base, strings: strings) { text += LiveStream.event("notify", notice) }
                }
                if ringing, !changes.calls.isEmpty { text += CallViews.ringing(list, party: party, base: base, strings: strings) }
                return text.isEmpty ? nil : text
            }
        }
    }

    /// Declines a call ringing for the member (`{"decline": "<call id>"}` from the live script, which sends a header
    /// no form can).
    func decline(_ request: Request, _ session: Session) async throws -> Response {
        guard mayCall(session) else { throw ChatError.notAllowed }
        guard request.headers[GatewayBar.scriptHeader] == "1" else { throw RequestError.forbidden("decline without the bar's header") }
        let body = try await request.body.collect(upTo: 4096)
        guard let callID = (try? JSONDecoder().decode(JSONValue.self, from: Data(body.readableBytesView)))?["decline"]?.string,
            CallSignalling.isCallID(callID)
        else { throw ChatError.invalidMessage("decline: a call id") }
        let loop = try await chats.loop(for: session)
        let rooms = try await chats.current(loop)
        guard let call = rooms.calls.calls[callID], call.caller != rooms.me else { throw ChatError.notInRoom }
        if call.phase(at: CallController.now()) == .ringing {
            let content = CallSignal.content(call: call.id, party: loop.credentials.deviceID)
            _ = try await chats.matrix(loop).send(room: call.room, type: "m.call.reject", content: content, transactionID: RandomToken.make())
        }
        return try JSONResponse.make(["declined": callID])
    }
}
