import GatehouseDataPlane
import NIOCore
import NIOHTTP2
import NIOHTTPTypesHTTP1

/// What the member listener needs to put the data plane into a pipeline: the gateway's routes and WebSocket upgrades,
/// the upstream pools and the read timeout. A `DataPlaneHandler` is made per HTTP/1.1 connection and per HTTP/2 stream.
struct MemberDataPlane: Sendable {
    let routes: any DataPlaneRoutes
    let upgrades: any DataPlaneUpgrades
    let pools: UpstreamPools
    let readTimeout: TimeAmount

    /// An HTTP/1.1 connection's handler, WebSocket upgrades included.
    func handler() -> DataPlaneHandler {
        DataPlaneHandler(routes: routes, upgrades: upgrades, pools: pools, readTimeout: readTimeout)
    }

    /// An HTTP/2 stream's handlers, from its frames to the application's request parts: the stream's request in
    /// HTTP/1.1's terms (`:authority` as `Host`) through the same handler as an HTTP/1.1 connection's, one request per
    /// stream, so its ordering rules never wait. What the data plane sends the app is the request the gateway builds
    /// from that head, never the stream's own fields; what it leaves to the application goes on as HTTP request
    /// parts, `https` their scheme.
    func http2StreamHandlers() -> [any ChannelHandler] {
        [
            HTTP2FramePayloadToHTTP1ServerCodec(), RequestHeadsAsBytes(), DataPlaneHandler(routes: routes, upgrades: nil, pools: pools, readTimeout: readTimeout),
            HTTP1ToHTTPServerCodec(secure: true),
        ]
    }
}
