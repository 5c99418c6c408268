import AllocationCounter
import Foundation
import GatehouseCore
import NIOCore
import NIOPosix
import Testing

@testable import Gatehouse

#if canImport(Glibc)
    import Glibc
#endif

/// How many blocks of memory the gateway's event loops allocate for one proxied request, counted (not timed), as
/// swift-nio's allocation-counter tests do: a member's keep-alive connection asks a path-mounted app for a 10 KB page
/// (the bar injected, links rewritten) or a JSON answer (passed through), N times, and the allocations of every
/// event loop's thread are read before and after. The member and the app are plain blocking sockets on threads of
/// their own, so nothing else allocates on the loops meanwhile. A change that allocates more per request fails here
/// and has to raise the limit knowingly; a change that allocates less lowers it.
@Suite(.serialized) struct DataPlaneAllocationTests {
    /// The limits: the counts of the debug build the test command runs (the same from run to run), with a little
    /// room; the release build allocates far fewer (`docs/benchmark.md` gives both).
    static let pageLimit = 1_650
    static let jsonLimit = 420
    static let requests = 400

    @Test func aProxiedPageAllocatesNoMoreThanItsLimit() async throws {
        let perRequest = try await Self.allocationsPerRequest(answer: Self.page)
        print("data plane: \(perRequest) allocations per proxied 10 KB page (limit \(Self.pageLimit))")
        #expect(perRequest <= Self.pageLimit)
    }

    @Test func aProxiedJSONAnswerAllocatesNoMoreThanItsLimit() async throws {
        let perRequest = try await Self.allocationsPerRequest(answer: Self.json, path: "/data.json", navigation: false)
        print("data plane: \(perRequest) allocations per proxied JSON answer (limit \(Self.jsonLimit))")
        #expect(perRequest <= Self.jsonLimit)
    }

    /// Signs a member in, then sends the page's request on one connection: warmed up first (pools, caches, the
    /// first connection to the app), then counted.
    static func allocationsPerRequest(answer: [UInt8], path: String = "/page.html", navigation: Bool = true) async throws -> Int {
        let upstream = try RawUpstream(answer: answer)
        defer { upstream.close() }
        return try await LiveGateway.run(configure: { configuration in
            configuration.apps = [AppConfiguration(slug: "bench", name: "Bench", upstream: URL(string: upstream.origin + "/")!)]
        }) { gateway in
            let cookies = try await ProxyTests.signedIn(gateway)
            let cookie = cookies.map { "\($0.key)=\($0.value)" }.sorted().joined(separator: "; ")
            let request = Array(
                ("GET /apps/bench\(path) HTTP/1.1\r\nHost: 127.0.0.1:\(gateway.port)\r\nCookie: \(cookie)\r\nAccept: text/html\r\n"
                    + "User-Agent: allocation-test\r\n" + (navigation ? "Sec-Fetch-Dest: document\r\n" : "") + "\r\n").utf8)
            let member = try KeepAliveMember(port: gateway.port)
            defer { member.close() }
            for _ in 0..<50 { #expect(try await member.exchange(request) == 200) }
            let servedBefore = gateway.servedByDataPlane("bench")
            let before = try await loopAllocations()
            for _ in 0..<requests { #expect(try await member.exchange(request) == 200) }
            let after = try await loopAllocations()
            // Every counted request was the data plane's: the application's path would count its own allocations.
            #expect(gateway.servedByDataPlane("bench") - servedBefore == requests)
            return Int((after - before) / UInt64(requests))
        }
    }

    /// The allocations so far of every event loop's thread of the group the gateway serves on.
    static func loopAllocations() async throws -> UInt64 {
        var total: UInt64 = 0
        for loop in MultiThreadedEventLoopGroup.singleton.makeIterator() {
            total += try await loop.submit { gatehouse_thread_allocations() }.get()
        }
        return total
    }

    static let page: [UInt8] = {
        let text = "Gatehouse benchmark row: ordinary words of a page, about as long as a paragraph of an internal app's."
        var body =
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>page</title>\n"
            + "<link rel=\"stylesheet\" href=\"/style.css\">\n</head>\n<body class=\"x\">\n<h1 id=\"title\">page</h1>\n"
        var number = 0
        while body.utf8.count < 10_000 {
            body += "<p class=\"row\" data-i=\"\(number)\">\(number) \(text)</p>\n"
            number += 1
        }
        body += "<p id=\"end\"><a href=\"/page.html\">again</a></p>\n</body>\n</html>\n"
        return Array("HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)".utf8)
    }()

    static let json: [UInt8] = {
        let body = "[" + (0..<100).map { "{\"id\":\($0),\"name\":\"item \($0)\"}" }.joined(separator: ",") + "]"
        return Array("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)".utf8)
    }()
}

/// A member's keep-alive connection on a blocking socket: one request at a time, each answer read whole (by its
/// length or its chunks) on NIO's blocking pool, never on an event loop.
final class KeepAliveMember: @unchecked Sendable {
    private let socket: RawSocket
    private var pending: [UInt8] = []

    init(port: Int) throws { socket = try RawSocket(port: port) }

    func close() { socket.close() }

    /// Sends `request` and reads its answer: the status.
    func exchange(_ request: [UInt8]) async throws -> Int {
        try await BlockingWork.run { [self] in
            socket.send(request)
            return try readAnswer()
        }
    }

    private func readAnswer() throws -> Int {
        let head = try readLine(until: Array("\r\n\r\n".utf8))
        let text = String(decoding: head, as: UTF8.self)
        guard text.hasPrefix("HTTP/1.1 "), let status = Int(text.dropFirst(9).prefix(3)) else { throw POSIXError(.EPROTO) }
        let fields = text.lowercased().split(separator: "\r\n")
        if let length = fields.first(where: { $0.hasPrefix("content-length:") }).flatMap({ Int($0.dropFirst(15).trimmingCharacters(in: .whitespaces)) }) {
            _ = try take(length)
        } else if fields.contains(where: { $0.hasPrefix("transfer-encoding:") && $0.contains("chunked") }) {
            while true {
                let sizeLine = String(decoding: try readLine(until: Array("\r\n".utf8)), as: UTF8.self)
                guard let size = Int(sizeLine.prefix { $0 != ";" }, radix: 16) else { throw POSIXError(.EPROTO) }
                _ = try take(size + 2)
                if size == 0 { break }
            }
        }
        return status
    }

    private func readLine(until end: [UInt8]) throws -> [UInt8] {
        while true {
            if let range = pending.firstRange(of: end) {
                defer { pending.removeSubrange(..<range.upperBound) }
                return Array(pending[..<range.lowerBound])
            }
            try fill()
        }
    }

    private func take(_ count: Int) throws -> [UInt8] {
        while pending.count < count { try fill() }
        defer { pending.removeSubrange(..<count) }
        return Array(pending[..<count])
    }

    private func fill() throws {
        var buffer = [UInt8](repeating: 0, count: 65536)
        let count = recv(socket.fd, &buffer, buffer.count, 0)
        guard count > 0 else { throw POSIXError(.ECONNRESET) }
        pending += buffer[..<count]
    }
}
