import CompressNIO
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdWSCompression
import HummingbirdWebSocket
import Logging
import NIOCore
import ServiceLifecycle

/// A real upstream for proxy tests that reports what it actually received, plus the awkward behaviours a gateway
/// must survive: cookies, redirects, gzip, HTML in tiny chunks, slowness, resets, huge bodies, early answers.
struct EchoUpstream {
    let port: Int
    var origin: String { "http://127.0.0.1:\(port)" }

    static func run<T>(_ body: (EchoUpstream) async throws -> T) async throws -> T {
        let port = try await LiveGateway.freePort()
        var logger = Logger(label: "echo")
        logger.logLevel = .error
        let app = Application(
            router: router(),
            // Compression for a client that proposes it, negotiated with the browser's client through the gateway.
            server: .http1WebSocketUpgrade(configuration: .init(ws: .init(extensions: [.perMessageDeflate()]))) { head, _, _ in
                guard head.path?.hasPrefix("/ws") == true else { return .dontUpgrade }
                // The first subprotocol the page offers is chosen.
                var answer = HTTPFields()
                if let offered = head.headerFields[HTTPField.Name("Sec-WebSocket-Protocol")!]?.split(separator: ",").first {
                    answer[HTTPField.Name("Sec-WebSocket-Protocol")!] = offered.trimmingCharacters(in: .whitespaces)
                }
                if head.path?.hasPrefix("/ws-headers") == true {
                    // Every header of the upgrade request, as `/echo` reports a plain request's.
                    var headers: [String: [String]] = [:]
                    for field in head.headerFields { headers[field.name.canonicalName, default: []].append(field.value) }
                    let report = String(decoding: try JSONSerialization.data(withJSONObject: ["headers": headers]), as: UTF8.self)
                    return .upgrade(answer) { inbound, outbound, _ in
                        try await outbound.write(.text(report))
                        for try await _ in inbound {}  // open until the other side closes
                    }
                }
                // First tells what the upgrade request carried, then echoes every message.
                let seen =
                    "user=\(head.headerFields[HTTPField.Name("X-Forwarded-User")!] ?? "") cookie=\(head.headerFields[.cookie] ?? "") host=\(head.authority ?? "")"
                return .upgrade(answer) { inbound, outbound, _ in
                    try await outbound.write(.text(seen))
                    for try await message in inbound.messages(maxSize: 1 << 20) {
                        if case .text(let text) = message { try await outbound.write(.text("echo: \(text)")) }
                    }
                }
            },
            configuration: .init(address: .hostname("127.0.0.1", port: port)), logger: logger
        )
        let group = ServiceGroup(services: [app], gracefulShutdownSignals: [], logger: logger)
        return try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            defer { tasks.cancelAll() }
            let result = try await body(EchoUpstream(port: port))
            await group.triggerGracefulShutdown()
            return result
        }
    }

    static func router() -> Router<BasicRequestContext> {
        let router = Router()
        for path in ["echo", "echo/**"] {
            router.on(RouterPath(stringLiteral: path), method: .get) { request, context in try await echo(request, context) }
            router.on(RouterPath(stringLiteral: path), method: .post) { request, context in try await echo(request, context) }
            router.on(RouterPath(stringLiteral: path), method: .put) { request, context in try await echo(request, context) }
        }
        router.get("set-cookie") { request, _ -> Response in
            var response = Response(status: .ok, headers: [.contentType: "text/plain"], body: .init(byteBuffer: ByteBuffer(string: "set")))
            for value in request.uri.queryParameters.getAll("c") { response.headers.append(HTTPField(name: .setCookie, value: String(value))) }
            return response
        }
        router.get("redirect") { request, _ in
            Response(status: .found, headers: [.location: request.uri.queryParameters.get("to") ?? "/"])
        }
        router.get("html") { request, _ -> Response in
            // `lines=N`: a page of N lines, as big as a test needs without a URL that long.
            let lines = Int(request.uri.queryParameters.get("lines") ?? "").map { String(repeating: EchoUpstream.line, count: $0) }
            let html =
                request.uri.queryParameters.get("doc") ?? lines.map { "<html><body>\($0)</body></html>" }
                ?? "<html><body><p id=\"x\">hello</p></body></html>"
            let csp = request.uri.queryParameters.get("csp")
            var headers: HTTPFields = [.contentType: "text/html; charset=utf-8"]
            if let csp { headers[.contentSecurityPolicy] = csp }
            if request.uri.queryParameters.get("attachment") != nil { headers[.contentDisposition] = "attachment; filename=x.html" }
            let chunk = Int(request.uri.queryParameters.get("chunk") ?? "") ?? 3
            let bytes = Array(html.utf8)
            let status = Int(request.uri.queryParameters.get("status") ?? "").map { HTTPResponse.Status(code: $0) } ?? .ok
            return Response(
                status: status, headers: headers,
                body: ResponseBody { writer in
                    var index = 0
                    while index < bytes.count {
                        try await writer.write(ByteBuffer(bytes: bytes[index..<min(index + chunk, bytes.count)]))
                        index += chunk
                    }
                    try await writer.finish(nil)
                })
        }
        router.get("gzip") { _, _ -> Response in
            var plain = ByteBuffer(
                string: "<html><body class=\"z\"><p id=\"g\">" + String(repeating: "compressible ", count: 2000) + "</p></body></html>")
            return Response(
                status: .ok, headers: [.contentType: "text/html", .contentEncoding: "gzip"],
                body: .init(byteBuffer: try plain.compress(with: .gzip())))
        }
        router.get("big") { request, _ -> Response in
            let megabytes = Int(request.uri.queryParameters.get("mb") ?? "") ?? 100
            let piece = ByteBuffer(
                string: String(repeating: "<p>0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef</p>\n", count: 14_000))
            return Response(
                status: .ok, headers: [.contentType: "text/html"],
                body: ResponseBody { writer in
                    try await writer.write(ByteBuffer(string: "<html><body>"))
                    var sent = 0
                    while sent < megabytes << 20 {
                        try await writer.write(piece)
                        sent += piece.readableBytes
                    }
                    try await writer.write(ByteBuffer(string: "</body></html>"))
                    try await writer.finish(nil)
                })
        }
        router.get("delay") { request, _ -> Response in
            // `ms=N`: the answer after N milliseconds, as a request still under way while the gateway changes.
            try await Task.sleep(for: .milliseconds(Int(request.uri.queryParameters.get("ms") ?? "") ?? 1000))
            return Response(status: .ok, headers: [.contentType: "text/plain"], body: .init(byteBuffer: ByteBuffer(string: "delayed")))
        }
        router.get("slow") { _, _ -> Response in
            try await Task.sleep(for: .seconds(30))
            return Response(status: .ok)
        }
        router.get("reset") { _, _ -> Response in
            Response(
                status: .ok, headers: [.contentType: "text/plain", .contentLength: "1000000"],
                body: ResponseBody { writer in
                    try await writer.write(ByteBuffer(string: "partial"))
                    throw CancellationError()  // the connection closes mid-body
                })
        }
        router.get("reset-html") { _, _ -> Response in
            Response(
                status: .ok, headers: [.contentType: "text/html; charset=utf-8"],
                body: ResponseBody { writer in
                    try await writer.write(ByteBuffer(string: "<html><body><p>partial"))
                    throw CancellationError()  // the connection closes mid-body, no final chunk
                })
        }
        // Whatever response the test describes: `status`, `type`, `body`, and `h=Name: value` headers.
        router.on("respond", method: .post, use: respond)
        router.get("respond", use: respond)
        @Sendable func respond(_ request: Request, _ context: BasicRequestContext) -> Response {
            let query = request.uri.queryParameters
            var response = Response(
                status: .init(code: Int(query.get("status") ?? "") ?? 200),
                headers: [.contentType: query.get("type") ?? "text/html; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(string: query.get("body") ?? "<html><body>x</body></html>")))
            for header in query.getAll("h") {
                let parts = header.split(separator: ":", maxSplits: 1)
                if parts.count == 2, let name = HTTPField.Name(String(parts[0])) {
                    response.headers.append(HTTPField(name: name, value: parts[1].trimmingCharacters(in: .whitespaces)))
                }
            }
            return response
        }
        router.get("utf16") { _, _ -> Response in
            var bytes: [UInt8] = [0xFF, 0xFE]
            for unit in "<html><body>x</body></html>".utf16 { bytes += [UInt8(unit & 0xFF), UInt8(unit >> 8)] }
            return Response(status: .ok, headers: [.contentType: "text/html"], body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
        }
        // A page that says it is gzipped and is not.
        router.get("corrupt-gzip") { _, _ -> Response in
            Response(
                status: .ok, headers: [.contentType: "text/html", .contentEncoding: "gzip"],
                body: .init(byteBuffer: ByteBuffer(string: "<html><body>not gzip at all</body></html>")))
        }
        router.get("bomb") { _, _ -> Response in
            Response(
                status: .ok, headers: [.contentType: "text/html", .contentEncoding: "gzip"], body: .init(byteBuffer: Self.bomb))
        }
        router.post("slow-answer") { request, _ -> Response in
            _ = try await request.body.collect(upTo: 1 << 20)
            try await Task.sleep(for: .seconds(30))
            return Response(status: .ok)
        }
        router.post("early") { _, _ in
            Response(status: .ok, headers: [.contentType: "text/plain"], body: .init(byteBuffer: ByteBuffer(string: "answered before reading")))
        }
        return router
    }

    static let line = "<p>a line of the app's page</p>"

    /// 32 MiB of one byte, gzipped to a few tens of KiB: a ratio no page has.
    static let bomb: ByteBuffer = {
        var plain = ByteBuffer(repeating: UInt8(ascii: "a"), count: 32 << 20)
        return (try? plain.compress(with: .gzip())) ?? ByteBuffer()
    }()

    static func echo(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        var headers: [String: [String]] = [:]
        for field in request.headers { headers[field.name.canonicalName, default: []].append(field.value) }
        if let authority = request.head.authority { headers["host"] = [authority] }
        var size = 0
        for try await chunk in request.body { size += chunk.readableBytes }
        let report: [String: Any] = ["method": request.method.rawValue, "path": request.uri.description, "headers": headers, "bodyBytes": size]
        let data = try JSONSerialization.data(withJSONObject: report, options: [.sortedKeys])
        return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
