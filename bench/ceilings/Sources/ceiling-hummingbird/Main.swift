import AsyncHTTPClient
import HTTPTypes
import Hummingbird
import NIOCore

/// The Hummingbird + async-http-client ceiling: every request is streamed to the upstream and its answer streamed
/// back, with no session, no rewriting, no headers of its own. What Gatehouse's design costs before it does any of
/// its own work.
///
/// Usage: ceiling-hummingbird LISTEN_PORT UPSTREAM_PORT
@main
struct CeilingHummingbird {
    static func main() async throws {
        let arguments = CommandLine.arguments
        guard arguments.count == 3, let port = Int(arguments[1]), let upstreamPort = Int(arguments[2]) else {
            fatalError("usage: ceiling-hummingbird LISTEN_PORT UPSTREAM_PORT")
        }
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 64
        configuration.decompression = .disabled
        configuration.redirectConfiguration = .disallow
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        let upstream = "http://127.0.0.1:\(upstreamPort)"
        let router = Router()
        router.on("**", method: .get) { request, _ -> Response in
            var outbound = HTTPClientRequest(url: upstream + request.uri.description)
            for field in request.headers where field.name != .connection {
                outbound.headers.add(name: field.name.rawName, value: field.value)
            }
            let answer = try await client.execute(outbound, timeout: .seconds(30))
            var headers = HTTPFields()
            for header in answer.headers where !["connection", "transfer-encoding", "keep-alive"].contains(header.name.lowercased()) {
                if let name = HTTPField.Name(header.name) { headers.append(HTTPField(name: name, value: header.value)) }
            }
            return Response(
                status: HTTPResponse.Status(code: Int(answer.status.code)), headers: headers,
                body: ResponseBody(asyncSequence: answer.body))
        }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)))
        try await app.runService()
        try await client.shutdown()
    }
}
