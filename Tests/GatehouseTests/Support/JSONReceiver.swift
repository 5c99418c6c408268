import Foundation
import Hummingbird
import NIOCore

/// A real HTTP endpoint for the code sender and the provisioning webhook: it records every JSON POST and answers
/// as told (success, an error status, or too slowly).
struct JSONReceiver {
    enum Behaviour: Sendable {
        case accept
        case fail(status: Int)
        case hang(seconds: Int)
    }

    struct Received: Sendable {
        /// Lower-case header names.
        var headers: [String: String]
        var json: [String: String]
    }

    actor State {
        var received: [Received] = []
        /// Answers to give, in order; the last one repeats.
        var script: [Behaviour] = [.accept]

        func record(_ item: Received) -> Behaviour {
            received.append(item)
            return script.count > 1 ? script.removeFirst() : script[0]
        }

        func set(_ script: [Behaviour]) { self.script = script }
    }

    let port: Int
    let state: State
    var url: URL { URL(string: "http://127.0.0.1:\(port)/hook")! }

    static func run<T>(_ body: (JSONReceiver) async throws -> T) async throws -> T {
        let state = State()
        let router = Router()
        router.post("hook") { request, _ -> Response in
            let body = try await request.body.collect(upTo: 1 << 20)
            let object = (try? JSONSerialization.jsonObject(with: Data(buffer: body))) as? [String: Any] ?? [:]
            var headers: [String: String] = [:]
            for field in request.headers { headers[field.name.canonicalName] = field.value }
            let behaviour = await state.record(Received(headers: headers, json: object.mapValues { "\($0)" }))
            switch behaviour {
            case .accept:
                return Response(status: .ok, body: .init(byteBuffer: ByteBuffer(string: "{}")))
            case .fail(let status):
                return Response(status: .init(code: status))
            case .hang(let seconds):
                try await Task.sleep(for: .seconds(seconds))
                return Response(status: .ok)
            }
        }
        return try await TestServer.run(router, label: "receiver") { port in try await body(JSONReceiver(port: port, state: state)) }
    }

    var received: [Received] { get async { await state.received } }
}
