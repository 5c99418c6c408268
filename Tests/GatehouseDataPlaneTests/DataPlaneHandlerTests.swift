import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing

@testable import GatehouseDataPlane

/// The data plane's handler between a member's connection and the application, with upstream connections that are
/// embedded channels on the same loop: every byte each side sees is read off, and each test drives the order.
@Suite struct DataPlaneHandlerTests {
    /// `/dp/…` goes to the data plane (a pass-through exchange), anything else to the application.
    struct Routes: DataPlaneRoutes {
        let outcomes: Outcomes
        let holds: Holds
        func route(_ head: RequestHead, peer: SocketAddress?) -> DataPlaneRoute {
            guard head.uri.hasPrefix("/dp/") else { return .application }
            let length = head.first("content-length").flatMap { Int($0) } ?? 0
            // `/dp/short…`: the gateway tells the app of fewer bytes than the member sends (as an HTTP/2 stream's DATA
            // beyond its length would be).
            return .proxy(
                PassThrough(
                    method: head.method, uri: head.uri, bodyLength: head.uri.hasPrefix("/dp/short") ? max(0, length - 2) : length,
                    outcomes: outcomes, holds: head.uri.hasPrefix("/dp/held") ? holds : nil))
        }
    }

    /// `/ws/tunnel` opens a tunnel to an embedded app connection on the member's loop; any other upgrade is refused.
    final class Upgrades: DataPlaneUpgrades, @unchecked Sendable {
        let asked = NIOLockedValueBox<[String]>([])
        let apps = NIOLockedValueBox<[EmbeddedChannel]>([])
        let tunnels = NIOLockedValueBox<[WebSocketTunnel]>([])

        func upgrade(_ head: HTTPRequestHead, peer: SocketAddress?, eventLoop: any EventLoop) -> EventLoopFuture<DataPlaneUpgrade> {
            asked.withLockedValue { $0.append(head.uri) }
            guard head.uri == "/ws/tunnel" else { return eventLoop.makeSucceededFuture(.application) }
            let app = EmbeddedChannel(handler: TunnelSide(.app), loop: eventLoop as! EmbeddedEventLoop)
            _ = app.connect(to: try! SocketAddress(ipAddress: "127.0.0.1", port: 8080))
            apps.withLockedValue { $0.append(app) }
            let answer = HTTPResponseHead(version: .http1_1, status: .switchingProtocols, headers: ["Upgrade": "websocket"])
            return eventLoop.makeSucceededFuture(.tunnel(answer, upstream: app) { tunnel in self.tunnels.withLockedValue { $0.append(tunnel) } })
        }
    }

    /// What the answers of `/dp/held…` wait for, in order (a jar change on its way to a shared store): each test
    /// completes them when it wants the answer to go on.
    final class Holds: @unchecked Sendable {
        var promises: [EventLoopPromise<Void>] = []
    }

    /// How each exchange ended, in order.
    final class Outcomes: Sendable {
        let box = NIOLockedValueBox<[(status: HTTPResponseStatus?, failure: String?)]>([])
        var all: [(status: HTTPResponseStatus?, failure: String?)] { box.withLockedValue { $0 } }
    }

    final class PassThrough: DataPlaneExchange {
        let endpoint = UpstreamEndpoint(address: try! SocketAddress(ipAddress: "127.0.0.1", port: 8080), host: "app.test")
        let upstreamHead: UpstreamRequestHead
        let outcomes: Outcomes
        let requestBodyLength: Int
        var isIdempotent: Bool { upstreamHead.method == .GET }

        let holds: Holds?

        init(method: HTTPMethod = .GET, uri: String, bodyLength: Int = 0, outcomes: Outcomes, holds: Holds? = nil) {
            self.holds = holds
            upstreamHead = UpstreamRequestHead(method: method, target: uri, host: "app.test", bodyLength: bodyLength, fields: [])!
            requestBodyLength = bodyLength
            self.outcomes = outcomes
        }

        func start(_ upstream: HTTPResponseHead) throws -> ResponseStart { .now(upstream) }
        func answerMayStart(on eventLoop: any EventLoop) -> EventLoopFuture<Void>? {
            guard let holds else { return nil }
            let held = eventLoop.makePromise(of: Void.self)
            holds.promises.append(held)
            return held.futureResult
        }
        func startAfterFirstChunk(_ chunk: ByteBuffer?) throws -> (HTTPResponseHead, ByteBuffer?) { fatalError("not held") }
        func body(_ chunk: ByteBuffer) throws -> ByteBuffer { chunk }
        func end() -> ByteBuffer? { nil }
        func answer(_ failure: DataPlaneFailure) -> (HTTPResponseHead, ByteBuffer) {
            let status: HTTPResponseStatus = if case .refused(_ as RequestBodyMismatch) = failure { .badRequest } else { .badGateway }
            return (HTTPResponseHead(version: .http1_1, status: status, headers: ["Content-Length": "6"]), ByteBuffer(string: "failed"))
        }
        func finished(status: HTTPResponseStatus?, failure: DataPlaneFailure?) {
            outcomes.box.withLockedValue { $0.append((status, failure.map { "\($0)" })) }
        }
    }

    /// Counts the reads asked of an upstream connection (the data plane reads only while the member takes its bytes).
    final class ReadCounter: ChannelOutboundHandler, Sendable {
        typealias OutboundIn = Any
        let count = NIOLockedValueBox(0)
        func read(context: ChannelHandlerContext) {
            count.withLockedValue { $0 += 1 }
            context.read()
        }
    }

    /// A member's connection through the handler, and the upstream connections its pool opened.
    final class Harness: @unchecked Sendable {
        let loop = EmbeddedEventLoop()
        let member: EmbeddedChannel
        let outcomes = Outcomes()
        let holds = Holds()
        let upgrades = Upgrades()
        /// The reads asked of the member's connection (the data plane holds them while an app takes no more of a body).
        let memberReads = ReadCounter()
        private(set) var upstreams: [(channel: EmbeddedChannel, reads: ReadCounter)] = []

        init() throws {
            member = EmbeddedChannel(loop: loop)
            let pools = UpstreamPools(limits: .init(maximumConnections: 4)) { [unowned self] _, loop in
                let channel = EmbeddedChannel(loop: loop as! EmbeddedEventLoop)
                let reads = ReadCounter()
                try! channel.pipeline.syncOperations.addHandler(reads)
                try! UpstreamPools.setUp(channel)
                _ = channel.connect(to: try! SocketAddress(ipAddress: "127.0.0.1", port: 8080))
                self.upstreams.append((channel, reads))
                return loop.makeSucceededFuture(channel)
            }
            let writer = HTTP1ResponseWriter()
            try member.pipeline.syncOperations.addHandlers([
                memberReads, ByteToMessageHandler(HTTP1RequestReader(limits: Self.limits, answers: writer)), writer,
                DataPlaneHandler(routes: Routes(outcomes: outcomes, holds: holds), upgrades: upgrades, pools: pools, readTimeout: .seconds(30)),
            ])
            try member.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        }

        static let limits = HTTP1RequestReader.Limits(maximumTargetBytes: 8192, maximumFieldBytes: 32768, maximumFieldCount: 256)

        func send(_ text: String) throws { try member.writeInbound(ByteBuffer(string: text)) }

        /// Everything the member has been sent so far.
        func memberReceived() throws -> String {
            try Self.drain(member)
        }

        /// What upstream connection `index` has been sent so far (heads and bodies go as bytes, without an encoder).
        func upstreamReceived(_ index: Int) throws -> String {
            var text = ""
            while let buffer = try upstreams[index].channel.readOutbound(as: ByteBuffer.self) { text += String(buffer: buffer) }
            return text
        }

        /// The member's encoder writes `IOData`.
        static func drain(_ channel: EmbeddedChannel) throws -> String {
            var text = ""
            while let data = try channel.readOutbound(as: IOData.self) {
                guard case .byteBuffer(let buffer) = data else { continue }
                text += String(buffer: buffer)
            }
            return text
        }

        /// The app's bytes arrive, and the connection asks for more as a socket reading on its own does after each
        /// read (embedded channels do not).
        func answer(_ index: Int, _ text: String) throws {
            try upstreams[index].channel.writeInbound(ByteBuffer(string: text))
            upstreams[index].channel.read()
        }

        /// The application's side: the parts it was handed, and its answer.
        func applicationReceivedHead() throws -> HTTPRequestHead? {
            while let part = try member.readInbound(as: HTTPServerRequestPart.self) {
                if case .head(let head) = part { return head }
            }
            return nil
        }

        func applicationAnswers(_ body: String) throws {
            try member.writeOutbound(
                HTTPServerResponsePart.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: ["Content-Length": "\(body.utf8.count)"])))
            try member.writeOutbound(HTTPServerResponsePart.body(.byteBuffer(ByteBuffer(string: body))))
            try member.writeOutbound(HTTPServerResponsePart.end(nil))
        }
    }

    static func request(_ path: String) -> String { "GET \(path) HTTP/1.1\r\nHost: gateway.test\r\n\r\n" }
    static func okay(_ body: String) -> String { "HTTP/1.1 200 OK\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)" }

    @Test func pipelinedRequestsForBothPathsAreAnsweredInOrder() throws {
        let harness = try Harness()
        // The data plane's request first: the application's waits (unseen) until that answer is complete.
        try harness.send(Self.request("/dp/first") + Self.request("/app/second"))
        #expect(try harness.applicationReceivedHead() == nil)
        #expect(try harness.upstreamReceived(0).hasPrefix("GET /dp/first HTTP/1.1"))
        try harness.answer(0, Self.okay("one"))
        #expect(try harness.applicationReceivedHead()?.uri == "/app/second")
        try harness.applicationAnswers("two")
        let received = try harness.memberReceived()
        let first = try #require(received.range(of: "one"))
        let second = try #require(received.range(of: "two"))
        #expect(first.upperBound < second.lowerBound)

        // The application's request first: the data plane's waits until the application has answered.
        try harness.send(Self.request("/app/third") + Self.request("/dp/fourth"))
        #expect(try harness.applicationReceivedHead()?.uri == "/app/third")
        #expect(try harness.upstreamReceived(0).isEmpty)
        try harness.applicationAnswers("three")
        #expect(try harness.upstreamReceived(0).hasPrefix("GET /dp/fourth HTTP/1.1"))
        try harness.answer(0, Self.okay("four"))
        let later = try harness.memberReceived()
        let third = try #require(later.range(of: "three"))
        let fourth = try #require(later.range(of: "four"))
        #expect(third.upperBound < fourth.lowerBound)
        #expect(harness.upstreams.count == 1)  // the kept-alive connection served both
        #expect(harness.outcomes.all.map(\.failure) == [nil, nil])
    }

    @Test func aMemberWhoStopsReadingStopsTheUpstreamsReads() throws {
        let harness = try Harness()
        try harness.send(Self.request("/dp/large"))
        _ = try harness.upstreamReceived(0)
        try harness.answer(0, "HTTP/1.1 200 OK\r\nContent-Length: 300000\r\n\r\n" + String(repeating: "a", count: 100_000))
        let readsWhileWritable = harness.upstreams[0].reads.count.withLockedValue { $0 }

        harness.member.isWritable = false
        try harness.answer(0, String(repeating: "b", count: 100_000))
        // Nothing more is read from the app while the member does not take what it was sent.
        #expect(harness.upstreams[0].reads.count.withLockedValue { $0 } == readsWhileWritable)

        harness.member.isWritable = true
        harness.member.pipeline.fireChannelWritabilityChanged()
        #expect(harness.upstreams[0].reads.count.withLockedValue { $0 } == readsWhileWritable + 1)
        try harness.answer(0, String(repeating: "c", count: 100_000))
        let received = try harness.memberReceived()
        #expect(received.hasPrefix("HTTP/1.1 200 OK"))
        #expect(received.filter { $0 == "c" }.count == 100_000)
        #expect(harness.outcomes.all.first?.failure == nil)
    }

    @Test func anUpstreamThatClosesMidAnswerEndsTheMembersAnswerIncomplete() throws {
        let harness = try Harness()
        try harness.send(Self.request("/dp/cut"))
        _ = try harness.upstreamReceived(0)
        try harness.answer(0, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789")
        try harness.upstreams[0].channel.close().wait()
        let received = try harness.memberReceived()
        #expect(received.hasPrefix("HTTP/1.1 200 OK"))
        #expect(received.hasSuffix("0123456789"))  // ten bytes of a hundred, then the close
        #expect(!harness.member.isActive)
        #expect(harness.outcomes.all.map(\.failure) == ["reset"])
        #expect(harness.outcomes.all.first?.status == .ok)
    }

    @Test func anUpstreamThatClosesBeforeAnsweringGetsAnErrorPage() throws {
        let harness = try Harness()
        try harness.send(Self.request("/dp/nothing"))
        _ = try harness.upstreamReceived(0)
        try harness.upstreams[0].channel.close().wait()
        let received = try harness.memberReceived()
        #expect(received.hasPrefix("HTTP/1.1 502 Bad Gateway"))
        #expect(received.hasSuffix("failed"))
        #expect(harness.member.isActive)  // a whole answer: the connection carries the next request
    }

    @Test func aKeptAliveConnectionClosedAsTheRequestGoesOutIsRetriedOnce() throws {
        let harness = try Harness()
        try harness.send(Self.request("/dp/one"))
        _ = try harness.upstreamReceived(0)
        try harness.answer(0, Self.okay("one"))
        _ = try harness.memberReceived()

        // The app closes the idle connection just as the next request is written on it.
        try harness.send(Self.request("/dp/two"))
        #expect(try harness.upstreamReceived(0).hasPrefix("GET /dp/two"))
        try harness.upstreams[0].channel.close().wait()
        #expect(harness.upstreams.count == 2)
        #expect(try harness.upstreamReceived(1).hasPrefix("GET /dp/two"))
        try harness.answer(1, Self.okay("two"))
        #expect(try harness.memberReceived().hasSuffix("two"))
        #expect(harness.outcomes.all.map(\.failure) == [nil, nil])

        // A second close before an answer on a fresh connection is not retried again: the member gets the page.
        try harness.send(Self.request("/dp/three"))
        _ = try harness.upstreamReceived(1)
        try harness.upstreams[1].channel.close().wait()
        #expect(harness.upstreams.count == 3)
        _ = try harness.upstreamReceived(2)
        try harness.upstreams[2].channel.close().wait()
        #expect(try harness.memberReceived().hasPrefix("HTTP/1.1 502"))
    }

    static func post(_ path: String, length: Int, _ body: String = "") -> String {
        "POST \(path) HTTP/1.1\r\nHost: gateway.test\r\nContent-Length: \(length)\r\n\r\n\(body)"
    }

    /// A form's body goes to the app as it comes, the head only once the body has begun; the connection is kept for
    /// the next request once both the request and the answer are whole.
    @Test func aPostedBodyGoesToTheAppAsItComesAfterItsFirstBytes() throws {
        let harness = try Harness()
        try harness.send(Self.post("/dp/form", length: 10))
        // A body that has not begun: nothing reaches the app yet.
        #expect(try harness.upstreamReceived(0) == "")
        try harness.send("01234")
        let first = try harness.upstreamReceived(0)
        #expect(first.hasPrefix("POST /dp/form HTTP/1.1\r\n") && first.contains("content-length: 10\r\n") && first.hasSuffix("\r\n\r\n01234"))
        try harness.send("56789")
        #expect(try harness.upstreamReceived(0) == "56789")
        try harness.answer(0, Self.okay("thanks"))
        #expect(try harness.memberReceived().hasSuffix("thanks"))
        try harness.send(Self.request("/dp/next"))
        #expect(try harness.upstreamReceived(0).hasPrefix("GET /dp/next"))
        #expect(harness.upstreams.count == 1)
        #expect(harness.outcomes.all.map(\.failure) == [nil])
    }

    /// An app that answers before reading the whole body: the member gets the answer, the rest of the body goes to
    /// no one (neither the app nor the application), and the app's connection, left mid-request, is not used again.
    @Test func anAppThatAnswersBeforeTheBodyEndsIsNotSentTheRest() throws {
        let harness = try Harness()
        try harness.send(Self.post("/dp/early", length: 10, "01234"))
        _ = try harness.upstreamReceived(0)
        try harness.answer(0, Self.okay("early"))
        #expect(try harness.memberReceived().hasSuffix("early"))
        try harness.send("56789" + Self.request("/dp/next"))
        #expect(try harness.applicationReceivedHead() == nil)
        #expect(!harness.upstreams[0].channel.isActive)
        #expect(harness.upstreams.count == 2)
        #expect(try harness.upstreamReceived(1).hasPrefix("GET /dp/next"))
        try harness.answer(1, Self.okay("next"))
        #expect(try harness.memberReceived().hasSuffix("next"))
    }

    /// While the app's connection takes no more of a body, the member's connection is not read further; it is as
    /// soon as the app's takes more.
    @Test func aMemberIsNotReadWhileTheAppTakesNoMoreOfItsBody() throws {
        let harness = try Harness()
        try harness.send(Self.post("/dp/upload", length: 100, "0123456789"))
        _ = try harness.upstreamReceived(0)
        let readsBefore = harness.memberReads.count.withLockedValue { $0 }
        harness.upstreams[0].channel.isWritable = false
        harness.member.read()
        #expect(harness.memberReads.count.withLockedValue { $0 } == readsBefore)
        harness.upstreams[0].channel.isWritable = true
        harness.upstreams[0].channel.pipeline.fireChannelWritabilityChanged()
        #expect(harness.memberReads.count.withLockedValue { $0 } == readsBefore + 1)
    }

    /// A body longer than what the app was told is never passed on: the member gets a refusal and the connection
    /// closes (its framing can no longer be trusted), and the app's connection is not used again.
    @Test func aBodyLongerThanTheAppWasToldIsRefused() throws {
        let harness = try Harness()
        try harness.send(Self.post("/dp/short", length: 5, "01234"))
        #expect(try harness.memberReceived().hasPrefix("HTTP/1.1 400 Bad Request"))
        #expect(!harness.member.isActive)
        #expect(try harness.upstreamReceived(0).isEmpty || !harness.upstreams[0].channel.isActive)
        #expect(harness.outcomes.all.first?.failure?.contains("does not match its length") == true)
    }

    static let upgrade = "GET /ws/tunnel HTTP/1.1\r\nHost: gateway.test\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n"

    @Test func aWebSocketUpgradeAfterOtherRequestsOpensATunnelThatPassesBytesUntouched() throws {
        let harness = try Harness()
        try harness.send(Self.request("/app/first") + Self.upgrade)
        #expect(try harness.applicationReceivedHead()?.uri == "/app/first")
        // Decided once the application's answer is out.
        #expect(harness.upgrades.asked.withLockedValue { $0 } == [])
        try harness.applicationAnswers("one")
        #expect(harness.upgrades.asked.withLockedValue { $0 } == ["/ws/tunnel"])
        harness.loop.run()  // the decoder leaves the pipeline
        #expect(try harness.memberReceived() == Self.okay("one") + "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n")
        let app = try #require(harness.upgrades.apps.withLockedValue { $0.first })

        // A masked "hi" from the browser reaches the app as it is, and the app's answer comes back as it is.
        let masked = ByteBuffer(bytes: [0x81, 0x82, 1, 2, 3, 4, 0x68 ^ 1, 0x69 ^ 2])
        try harness.member.writeInbound(masked)
        #expect(try app.readOutbound(as: ByteBuffer.self) == masked)
        let reply = ByteBuffer(bytes: [0x81, 0x02, 0x68, 0x69])
        try app.writeInbound(reply)
        #expect(try harness.member.readOutbound(as: ByteBuffer.self) == reply)
        // Nothing of it reached the application.
        #expect(try harness.member.readInbound(as: HTTPServerRequestPart.self) == .end(nil))
        #expect(try harness.member.readInbound(as: HTTPServerRequestPart.self) == nil)
        #expect(throws: ChannelPipelineError.notFound) { try harness.member.pipeline.syncOperations.handler(type: DataPlaneHandler.self) }
    }

    @Test func theGatewayEndsATunnelWithCloseFramesBetweenThePeersFrames() throws {
        let harness = try Harness()
        try harness.send(Self.upgrade)
        harness.loop.run()
        _ = try harness.memberReceived()
        let app = try #require(harness.upgrades.apps.withLockedValue { $0.first })
        let tunnel = try #require(harness.upgrades.tunnels.withLockedValue { $0.first })
        // The app is in the middle of a frame (3 of its 5 bytes sent), the browser between two.
        try app.writeInbound(ByteBuffer(bytes: [0x82, 0x05, 1, 2]))
        _ = try harness.member.readOutbound(as: ByteBuffer.self)
        try harness.member.writeInbound(ByteBuffer(bytes: [0x81, 0x80, 9, 9, 9, 9]))
        _ = try app.readOutbound(as: ByteBuffer.self)
        tunnel.end(1001)
        harness.loop.run()
        // The browser gets no frame of the gateway's inside the app's: its connection just closes.
        #expect(try harness.member.readOutbound(as: ByteBuffer.self)?.readableBytes == 0)
        #expect(!harness.member.isActive)
        // The app gets a client's (masked) close frame: "going away".
        let close = try #require(try app.readOutbound(as: ByteBuffer.self))
        let bytes = Array(close.readableBytesView)
        #expect(bytes.count == 8 && bytes[0] == 0x88 && bytes[1] == 0x82)
        #expect([bytes[6] ^ bytes[2], bytes[7] ^ bytes[3]] == [0x03, 0xE9])
        #expect(!app.isActive)
    }

    @Test func eitherSideClosingClosesTheOther() throws {
        let harness = try Harness()
        try harness.send(Self.upgrade)
        harness.loop.run()
        let app = try #require(harness.upgrades.apps.withLockedValue { $0.first })
        try app.close().wait()
        #expect(!harness.member.isActive)
    }

    @Test func aRefusedUpgradeIsAPlainRequestWhoseAnswerEndsTheConnection() throws {
        let harness = try Harness()
        try harness.send(Self.upgrade.replacingOccurrences(of: "/ws/tunnel", with: "/ws/refused"))
        #expect(try harness.applicationReceivedHead()?.uri == "/ws/refused")
        #expect(try harness.member.readInbound(as: HTTPServerRequestPart.self) == .end(nil))
        try harness.applicationAnswers("signed out")
        let answer = try harness.memberReceived()
        #expect(answer.hasPrefix("HTTP/1.1 200 OK\r\n") && answer.lowercased().contains("connection: close\r\n"))
        #expect(!harness.member.isActive)
        #expect(harness.upgrades.apps.withLockedValue { $0.isEmpty })
    }

    @Test func frameBoundariesFollowHeadersInPiecesAndEveryLengthForm() {
        var boundaries = FrameBoundaries()
        // A masked frame with a 16-bit length (300), its header in two pieces.
        boundaries.pass(ByteBuffer(bytes: [0x82, 0xFE, 0x01]))
        #expect(!boundaries.atBoundary)
        boundaries.pass(ByteBuffer(bytes: [0x2C, 1, 2, 3, 4] + [UInt8](repeating: 0, count: 299)))
        #expect(!boundaries.atBoundary)
        boundaries.pass(ByteBuffer(bytes: [0]))
        #expect(boundaries.atBoundary)
        // A 64-bit length (70,000) and, in the same bytes, the start of the next frame.
        let long: [UInt8] = [0x82, 0x7F, 0, 0, 0, 0, 0, 0x01, 0x11, 0x70]
        boundaries.pass(ByteBuffer(bytes: long + [UInt8](repeating: 7, count: 70_000) + [0x89]))
        #expect(!boundaries.atBoundary)
        // An empty ping completes it.
        boundaries.pass(ByteBuffer(bytes: [0x00]))
        #expect(boundaries.atBoundary)
    }

    @Test func anAnswerHeldForTheStoreGoesOnWithWhatTheAppSentMeanwhile() throws {
        let harness = try Harness()
        try harness.send(Self.request("/dp/held"))
        _ = try harness.upstreamReceived(0)
        let readsBefore = harness.upstreams[0].reads.count.withLockedValue { $0 }
        try harness.upstreams[0].channel.writeInbound(ByteBuffer(string: Self.okay("kept")))
        // Held: nothing reaches the member, and the app's connection is not read further meanwhile.
        #expect(try harness.memberReceived().isEmpty)
        harness.upstreams[0].channel.read()
        #expect(harness.upstreams[0].reads.count.withLockedValue { $0 } == readsBefore)
        harness.holds.promises[0].succeed()
        let received = try harness.memberReceived()
        #expect(received.hasPrefix("HTTP/1.1 200 OK\r\n") && received.hasSuffix("\r\n\r\nkept"))
        #expect(harness.outcomes.all.map(\.failure) == [nil])
        // The connection goes back to the pool and carries the next request.
        try harness.send(Self.request("/dp/next"))
        #expect(try harness.upstreamReceived(0).hasPrefix("GET /dp/next HTTP/1.1"))
        try harness.answer(0, Self.okay("next"))
        #expect(try harness.memberReceived().hasSuffix("next"))
        #expect(harness.upstreams.count == 1)
    }

    /// A held answer whose app sends `answer` and closes before the wait ends: the harness, and what the member got.
    static func heldThenClosed(_ answer: String) throws -> (Harness, String) {
        let harness = try Harness()
        try harness.send(Self.request("/dp/held"))
        _ = try harness.upstreamReceived(0)
        try harness.upstreams[0].channel.writeInbound(ByteBuffer(string: answer))
        try harness.upstreams[0].channel.close().wait()
        harness.holds.promises[0].succeed()
        return (harness, try harness.memberReceived())
    }

    @Test func anAppThatClosesWhileItsAnswerIsHeldStillHasItDelivered() throws {
        // Complete before the close (`Connection: close`): delivered whole.
        let (whole, received) = try Self.heldThenClosed("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 5\r\n\r\nwhole")
        #expect(received.hasSuffix("\r\n\r\nwhole"))
        #expect(whole.outcomes.all.map(\.failure) == [nil])
        #expect(whole.member.isActive)

        // Cut off before its end: what came goes out, and the member's connection closes without the rest.
        let (cut, partial) = try Self.heldThenClosed("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")
        #expect(partial.hasSuffix("\r\n\r\nabc"))
        #expect(cut.outcomes.all.count == 1 && cut.outcomes.all[0].failure?.contains("reset") == true)
        #expect(!cut.member.isActive)
    }

    /// The store never took the change in time: the member gets the exchange's error answer, not the app's, and
    /// the app's connection, mid-answer, is not reused.
    @Test func aHeldAnswerWhoseWaitFailsIsAnErrorAnswer() throws {
        struct StoreDown: Error {}
        let harness = try Harness()
        try harness.send(Self.request("/dp/held"))
        _ = try harness.upstreamReceived(0)
        try harness.upstreams[0].channel.writeInbound(ByteBuffer(string: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nsecret"))
        harness.holds.promises[0].fail(StoreDown())
        let received = try harness.memberReceived()
        #expect(received.hasPrefix("HTTP/1.1 502 Bad Gateway\r\n") && received.hasSuffix("failed") && !received.contains("secret"))
        #expect(harness.outcomes.all.count == 1 && harness.outcomes.all[0].failure?.contains("StoreDown") == true)
        #expect(!harness.upstreams[0].channel.isActive)
        #expect(harness.member.isActive)
    }
}
