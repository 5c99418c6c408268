import Foundation
import GatehouseCore
import GatehouseMatrix
import Hummingbird

/// The ring every page of a member's hears: the calls ringing for them as a stream, and declining one. On the
/// gateway's host and on every app host (`HostMountController`), so that the bar on any app's page shows the
/// prompt; Accept opens the call's page on the gateway.
struct CallRing: Sendable {
    let chats: ChatSessions
    let features: FeaturesConfiguration
    let renderer: PageRenderer
    let publicOrigin: String
    let draining: Draining

    /// Whether the member may call: registered with a chat account, and both Chats and Calls theirs.
    func mayCall(_ session: Session) -> Bool { ChatFeature.allows(.calls, session, chats: chats, features: features) }

    /// The calls ringing for the member, as a stream: every page's prompt (the bar's on apps, the gateway's own
    /// pages'). `ringing` with the whole list at once and whenever a call's signalling changes it.
    func ring(_ session: Session) async throws -> Response {
        guard mayCall(session) else { throw ChatError.notAllowed }
        let loop = try await chats.loop(for: session)
        let rooms = try await chats.current(loop)
        let strings = renderer.strings
        let base = publicOrigin
        let party = loop.credentials.deviceID
        return await LiveStream.response(loop: loop, draining: draining, first: CallViews.ringing(rooms, party: party, base: base, strings: strings)) {
            changes, list in changes.calls.isEmpty ? nil : CallViews.ringing(list, party: party, base: base, strings: strings)
        }
    }

    /// Declines a call ringing for the member (`{"decline": "<call id>"}` from the bar's script, which sends a
    /// header no form can).
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
