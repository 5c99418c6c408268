import Foundation
import GatehouseCore
import GatehouseMatrix
import Hummingbird

/// A call's signalling through the gateway: the TURN servers for the page, the signals it sends, the signals it
/// receives, and the ring every page of the member's hears.
extension CallController {
    /// The ICE servers for a call's page: the homeserver's TURN server with the member's short-lived credentials
    /// (JSON). With `relay_only` and no TURN server, no call can connect: said as an error.
    func servers(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        try GatewayPageIsolation.checkPageToken(request, session: context.session)
        let loop = try await chat.loop(context.session)
        let turn = try await chats.matrix(loop).turnServer()
        if turn == nil, relayOnly { throw ChatError.homeserver(.refused(status: 404, errcode: "M_NOT_FOUND", message: "the homeserver has no TURN server")) }
        let servers: [[String: Any]] = turn.map { [["urls": $0.uris, "username": $0.username, "credential": $0.password]] } ?? []
        return try JSONResponse.make(["iceServers": servers, "iceTransportPolicy": relayOnly ? "relay" : "all", "ttl": turn?.ttl ?? 0])
    }

    /// One signal from a call's page (JSON), checked (`CallSignalling`) and sent into the direct chat as the
    /// member's device. The room must be the member's, of two, and for anything but an invite the call must be one
    /// the room holds.
    func signal(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        guard request.headers[GatewayPageIsolation.pageToken] != nil else { throw RequestError.forbidden("call signal without the page's token") }
        try GatewayPageIsolation.checkPageToken(request, session: context.session)
        let body = try await request.body.collect(upTo: 128 * 1024)
        guard let json = try? JSONDecoder().decode(JSONValue.self, from: Data(body.readableBytesView)) else {
            throw ChatError.invalidMessage("a JSON object")
        }
        let loop = try await chat.loop(context.session)
        let outgoing = try signalling.outgoing(json, party: loop.credentials.deviceID)
        let rooms = try await chat.current(loop)
        guard let room = rooms.rooms[outgoing.room], room.membership == .joined, room.isOneToOne, rooms.peer(in: room) != nil else {
            throw ChatError.notInRoom
        }
        if outgoing.kind != .invite {
            guard let call = rooms.calls.calls[outgoing.callID], call.room == room.id else { throw ChatError.notInRoom }
        }
        let eventID = try await chats.matrix(loop).send(room: room.id, type: outgoing.eventType, content: outgoing.content, transactionID: RandomToken.make())
        return try JSONResponse.make(["event_id": eventID])
    }

    /// A call's live signals for its page (`?call=<id>`): every signal of that call but the page's own device's.
    func events(_ request: Request, _ context: SignedInRequestContext) async throws -> Response {
        try GatewayPageIsolation.checkPageToken(request, session: context.session)
        guard let callID = request.uri.queryParameters.get("call"), CallSignalling.isCallID(callID) else {
            throw RequestError.badRequest("call: a call id")
        }
        let loop = try await chat.loop(context.session)
        _ = try await chat.current(loop)
        let party = loop.credentials.deviceID
        let signalling = signalling
        return await LiveStream.response(loop: loop, draining: chat.draining, first: "") { changes, list in
            let text = changes.calls.filter { $0.callID == callID && !($0.sender == list.me && $0.party == party) }
                .compactMap(signalling.incoming).map { LiveStream.event("signal", $0) }.joined()
            return text.isEmpty ? nil : text
        }
    }
}
