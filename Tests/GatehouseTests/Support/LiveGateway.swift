import AsyncHTTPClient
import CompressNIO
import Foundation
import GatehouseCore
import Hummingbird
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import ServiceLifecycle
import Testing

@testable import Gatehouse

/// A real gateway on a loopback port, in development mode with its built-in provider, and a client that behaves
/// like a browser without following redirects.
struct LiveGateway {
    let port: Int
    let configuration: GatehouseConfiguration
    let built: GatehouseApplication.Built
    let client: HTTPClient
    /// Begins the gateway's graceful shutdown, as `SIGTERM` does.
    let beginShutdown: @Sendable () async -> Void

    /// Over HTTPS when the configuration gives the listener a certificate (for `localhost`).
    var origin: String { configuration.listen.tls == nil ? "http://127.0.0.1:\(port)" : "https://localhost:\(port)" }

    /// A loopback port for a test server, never handed out twice in one run. Binding port 0 and closing it again is
    /// not enough: the kernel may give the same port to the next caller before the first server listens on it (two
    /// servers of parallel tests then fight for one port). So ports come from a counter below the ephemeral range
    /// (which the kernel's own choices, and the sources of outgoing connections, never use), each checked free.
    static func freePort() async throws -> Int {
        for _ in 0..<Self.portRange.count {
            let candidate =
                Self.portRange.lowerBound
                + Self.portCounter.withLockedValue { next in
                    defer { next = (next + 1) % Self.portRange.count }
                    return next
                }
            if let channel = try? await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton).bind(host: "127.0.0.1", port: candidate).get() {
                try await channel.close()
                return candidate
            }
        }
        throw HTTPClientError.connectTimeout
    }

    static let portRange = 20_000..<32_000
    static let portCounter = NIOLockedValueBox(Int.random(in: 0..<portRange.count))

    static func developmentConfiguration(port: Int, databasePath: String = ":memory:", https: Bool = false) throws -> GatehouseConfiguration {
        let publicURL = https ? "https://localhost:\(port)" : "http://127.0.0.1:\(port)"
        var configuration = try ConfigurationLoader(environment: ["GATEHOUSE_PUBLIC_URL": publicURL], developmentDefaults: .standard)
            .load(
                path: nil, development: true)
        configuration.storage.sqlitePath = databasePath
        configuration.storage.keys = .keyring(.forTests)
        configuration.demoAppsPort = nil
        configuration.metrics = nil  // tests read the registry itself; a test of the listener gives it a free port
        configuration.directories = DirectoriesConfiguration(
            templates: Self.root + "/Templates", publicFiles: Self.root + "/Public", strings: Self.root + "/Strings")
        return configuration
    }

    /// The package root, found from this file so tests run from any working directory.
    static let root: String = {
        var url = URL(fileURLWithPath: #filePath)
        while url.path != "/" {
            url.deleteLastPathComponent()
            if FileManager.default.fileExists(atPath: url.appendingPathComponent("Package.swift").path) { return url.path }
        }
        return FileManager.default.currentDirectoryPath
    }()

    /// With `tls`, the gateway serves https://localhost:<port> (its public URL too) with that certificate, and the
    /// client speaks HTTP/2 to it when `http2`, else HTTP/1.1.
    static func run<T>(
        tls: ListenTLSConfiguration? = nil, http2: Bool = false, configure: (inout GatehouseConfiguration) -> Void = { _ in },
        hostResolver: any HostResolver = SystemHostResolver(), _ body: (LiveGateway) async throws -> T
    ) async throws -> T {
        let port = try await freePort()
        var configuration = try developmentConfiguration(port: port, https: tls != nil)
        configuration.listen.tls = tls
        configure(&configuration)
        var logger = Logger(label: "gatehouse-test")
        logger.logLevel = .warning
        let built = try await GatehouseApplication.build(configuration: configuration, logger: logger, hostResolver: hostResolver)
        var clientConfiguration = HTTPClient.Configuration(redirectConfiguration: .disallow)
        if let tls = configuration.listen.tls {
            // Trusting the listener's own certificate file.
            var trusting = TLSConfiguration.makeClientConfiguration()
            trusting.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(tls.certificateFile))
            clientConfiguration.tlsConfiguration = trusting
            clientConfiguration.httpVersion = http2 ? .automatic : .http1Only
        }
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: clientConfiguration)
        let group = built.serviceGroup(signals: [])
        let stopped = NIOLockedValueBox<(any Error)?>(nil)
        let running = Task {
            do { try await group.run() } catch {
                stopped.withLockedValue { $0 = error }
                throw error
            }
            stopped.withLockedValue { $0 = NotStarted() }
        }
        let gateway = LiveGateway(
            port: port, configuration: configuration, built: built, client: client, beginShutdown: { await group.triggerGracefulShutdown() })
        do {
            try await gateway.waitUntilListening(unless: stopped)
            let result = try await body(gateway)
            try await client.shutdown()
            try await stop(group, running)
            return result
        } catch {
            try? await client.shutdown()
            try? await stop(group, running)
            throw error
        }
    }

    /// Shuts the gateway down; one that has not stopped a minute later fails the test, saying so, instead of holding
    /// the whole run (the service left running is left behind).
    private static func stop(_ group: ServiceGroup, _ running: Task<Void, any Error>) async throws {
        await group.triggerGracefulShutdown()
        struct NotStopped: Error, CustomStringConvertible {
            var description: String { "the gateway did not stop within 60 seconds of its graceful shutdown" }
        }
        try await withTimeout(.seconds(60), { try await running.value }) {
            Issue.record(NotStopped())
            return NotStopped()
        }
    }

    /// Probes `/healthz` until the gateway answers (for up to two minutes, the migrations' own deadline on a busy
    /// machine's PostgreSQL), or until it has `stopped` (its start failed: the test fails with the error at once).
    /// Each probe has a deadline of its own: the client retries a refused connection until the request's deadline,
    /// so a probe of a gateway that never listens would wait out a minute each time.
    private func waitUntilListening(unless stopped: NIOLockedValueBox<(any Error)?>) async throws {
        let deadline = ContinuousClock.now + .seconds(120)
        while ContinuousClock.now < deadline {
            if (try? await send(.GET, "/healthz", cookies: [:], headers: [], body: nil, timeout: .seconds(1))) != nil { return }
            if let error = stopped.withLockedValue({ $0 }) { throw error }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw HTTPClientError.connectTimeout
    }

    /// A gateway whose service group ended before it ever answered.
    struct NotStarted: Error, CustomStringConvertible {
        var description: String { "the gateway stopped before it answered /healthz" }
    }

    /// How many requests for `app` the data plane has answered (`gatehouse_data_plane_requests_total`): tests of the
    /// proxy assert it, so that they cannot pass through the application's path unnoticed.
    func servedByDataPlane(_ app: String) -> Int {
        let line = built.metrics.exposition().split(separator: "\n").first { $0.hasPrefix("gatehouse_data_plane_requests_total{app=\"\(app)\"}") }
        return line.flatMap { $0.split(separator: " ").last }.flatMap { Int($0) } ?? 0
    }

    struct Reply {
        var status: Int
        var version = HTTPVersion.http1_1
        var headers: HTTPHeaders
        /// The body as text, gunzipped when it came with `Content-Encoding: gzip` (as a browser reads it)…
        var body: String
        /// …and how many bytes it took on the wire.
        var wireBytes = 0
        var location: String? { headers.first(name: "Location") }
        var setCookies: [String] { headers["Set-Cookie"] }
    }

    func get(_ pathOrURL: String, cookies: [String: String], headers: [(String, String)] = [], limit: Int = 4 << 20) async throws -> Reply {
        try await send(.GET, pathOrURL, cookies: cookies, headers: headers, body: nil, limit: limit)
    }

    func post(_ pathOrURL: String, form: [(String, String)], cookies: [String: String], headers: [(String, String)] = []) async throws -> Reply {
        try await send(
            .POST, pathOrURL, cookies: cookies, headers: [("Content-Type", "application/x-www-form-urlencoded")] + headers,
            body: FormEncoding.encode(form))
    }

    func send(
        _ method: HTTPMethod, _ pathOrURL: String, cookies: [String: String], headers: [(String, String)], body: String?, limit: Int = 4 << 20,
        timeout: Duration = .seconds(60)
    ) async throws -> Reply {
        var request = HTTPClientRequest(url: pathOrURL.hasPrefix("http") ? pathOrURL : origin + pathOrURL)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if !cookies.isEmpty { request.headers.add(name: "Cookie", value: cookies.map { "\($0)=\($1)" }.joined(separator: "; ")) }
        if let body { request.body = .bytes(ByteBuffer(string: body)) }
        let response = try await client.execute(request, timeout: .init(timeout))
        var buffer = try await response.body.collect(upTo: limit)
        let wireBytes = buffer.readableBytes
        if response.headers.first(name: "Content-Encoding") == "gzip" { buffer = try buffer.decompress(with: .gzip()) }
        return Reply(
            status: Int(response.status.code), version: response.version, headers: response.headers, body: String(buffer: buffer),
            wireBytes: wireBytes)
    }
}

/// Immutable once created; tests hand it to child tasks (a WebSocket open while another request signs out).
extension LiveGateway: @unchecked Sendable {}
