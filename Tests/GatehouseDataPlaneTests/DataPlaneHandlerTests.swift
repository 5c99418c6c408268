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
        func route(_ head: HTTPRequestHead, peer: SocketAddress?) -> DataPlaneRoute {
            guard head.uri.hasPrefix("/dp/") else { return .application }
            return .proxy(PassThrough(uri: head.uri, outcomes: outcomes))
        }
    }

    /// How each exchange ended, in order.
    final class Outcomes: Sendable {
        let box = NIOLockedValueBox<[(status: HTTPResponseStatus?, failure: String?)]>([])
        var all: [(status: HTTPResponseStatus?, failure: String?)] { box.withLockedValue { $0 } }
    }

    final class PassThrough: DataPlaneExchange {
        let endpoint = UpstreamEndpoint(address: try! SocketAddress(ipAddress: "127.0.0.1", port: 8080), host: "app.test")
        let upstreamHead: HTTPRequestHead
        let outcomes: Outcomes
        var isIdempotent: Bool { true }

        init(uri: String, outcomes: Outcomes) {
            upstreamHead = HTTPRequestHead(version: .http1_1, method: .GET, uri: uri, headers: ["Host": "app.test"])
            self.outcomes = outcomes
        }

        func start(_ upstream: HTTPResponseHead) throws -> ResponseStart { .now(upstream) }
        func startAfterFirstChunk(_ chunk: ByteBuffer?) throws -> (HTTPResponseHead, ByteBuffer?) { fatalError("not held") }
        func body(_ chunk: ByteBuffer) throws -> ByteBuffer { chunk }
        func end() -> ByteBuffer? { nil }
        func answer(_ failure: DataPlaneFailure) -> (HTTPResponseHead, ByteBuffer) {
            (HTTPResponseHead(version: .http1_1, status: .badGateway, headers: ["Content-Length": "6"]), ByteBuffer(string: "failed"))
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
            try member.pipeline.syncOperations.addHandlers([
                ByteToMessageHandler(HTTPRequestDecoder()), HTTPResponseEncoder(),
                DataPlaneHandler(routes: Routes(outcomes: outcomes), pools: pools, readTimeout: .seconds(30)),
            ])
            try member.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        }

        func send(_ text: String) throws { try member.writeInbound(ByteBuffer(string: text)) }

        /// Everything the member has been sent so far.
        func memberReceived() throws -> String {
            try Self.drain(member)
        }

        /// What upstream connection `index` has been sent so far.
        func upstreamReceived(_ index: Int) throws -> String {
            try Self.drain(upstreams[index].channel)
        }

        /// The encoders write `IOData`.
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

    @Test func aWebSocketUpgradeTurnsTheConnectionOverToTheApplication() throws {
        let harness = try Harness()
        try harness.send("GET /app/socket HTTP/1.1\r\nHost: gateway.test\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n")
        #expect(try harness.applicationReceivedHead()?.uri == "/app/socket")
        #expect(try harness.member.readInbound(as: HTTPServerRequestPart.self) == .end(nil))
        try harness.member.writeOutbound(
            HTTPServerResponsePart.head(HTTPResponseHead(version: .http1_1, status: .switchingProtocols, headers: ["Upgrade": "websocket"])))
        // From here on the handler passes whatever comes, untouched (the decoder would be gone by now).
        let frame = ByteBuffer(bytes: [0x81, 0x02, 0x68, 0x69])
        let decoder = try harness.member.pipeline.syncOperations.context(handlerType: ByteToMessageHandler<HTTPRequestDecoder>.self)
        decoder.fireChannelRead(NIOAny(frame))
        #expect(try harness.member.readInbound(as: ByteBuffer.self) == frame)
        #expect(harness.upstreams.isEmpty)
    }
}
