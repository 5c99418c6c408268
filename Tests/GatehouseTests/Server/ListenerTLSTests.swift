import AsyncHTTPClient
import Foundation
import GatehouseCore
import Hummingbird
import Logging
import NIOCore
import NIOHTTP1
import NIOSSL
import Testing

@testable import Gatehouse

/// HTTPS on the members' listener: the pair checked with every problem named at once, served to clients that trust
/// its authority (and to no others), and replaced without a restart, a bad replacement keeping the pair in use.
@Suite struct ListenerTLSTests {
    /// A folder with a certificate and key written as the configuration names them.
    struct Files {
        let folder: URL
        var certificate: String { folder.appendingPathComponent("cert.pem").path }
        var key: String { folder.appendingPathComponent("key.pem").path }

        init() throws {
            folder = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-tls-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        }

        func write(_ pair: DevelopmentCertificates, key: String? = nil) throws {
            try (pair.certificatePEM + "\n" + pair.authorityPEM + "\n").write(toFile: certificate, atomically: true, encoding: .utf8)
            try (key ?? pair.privateKeyPEM).write(toFile: self.key, atomically: true, encoding: .utf8)
        }

        var configuration: ListenTLSConfiguration { ListenTLSConfiguration(certificateFile: certificate, privateKeyFile: key) }
    }

    @Test func everyProblemOfThePairIsNamedWithItsKey() throws {
        let files = try Files()
        let unreadable = TLSIdentity.load(ListenTLSConfiguration(certificateFile: "/nonexistent/cert.pem", privateKeyFile: "/nonexistent/key.pem"))
        #expect(unreadable.problems.map(\.keyPath) == ["listen.tls.certificate_file", "listen.tls.private_key_file"])
        #expect(unreadable.problems[0].message.contains("/nonexistent/cert.pem"))

        let one = try DevelopmentCertificates.make()
        let other = try DevelopmentCertificates.make()
        try files.write(one, key: other.privateKeyPEM)
        let mismatched = TLSIdentity.load(files.configuration)
        #expect(mismatched.problems.map(\.keyPath) == ["listen.tls.private_key_file"])
        #expect(mismatched.problems.first?.message.contains("is not the key of the certificate") == true)

        try files.write(try DevelopmentCertificates.make(days: 1, now: Date().addingTimeInterval(-3 * 86_400)))
        #expect(TLSIdentity.load(files.configuration).problems.first?.message.contains("expired on") == true)

        try files.write(one, key: "-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n")
        try "no certificate here".write(toFile: files.certificate, atomically: true, encoding: .utf8)
        #expect(TLSIdentity.load(files.configuration).problems.map(\.keyPath) == ["listen.tls.certificate_file", "listen.tls.private_key_file"])

        try files.write(one)
        #expect(TLSIdentity.load(files.configuration).problems.isEmpty)
    }

    /// The key paths of the problems with a configuration file holding `listen.tls` = `file`.
    static func problems(_ file: [String: Any], _ environment: [String: String] = [:]) throws -> [String] {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-tls-config-\(UUID().uuidString).json")
        try JSONSerialization.data(withJSONObject: ["listen": ["tls": file]]).write(to: path)
        do {
            _ = try ConfigurationLoader(environment: environment, developmentDefaults: .standard).load(path: path.path, development: true)
            return []
        } catch {
            return error.problems.map(\.keyPath)
        }
    }

    @Test func theRedirectGoesToThePublicOriginWhateverTheRequestSays() {
        typealias Redirect = HTTPRedirectServer.RedirectToHTTPS<BasicRequestContext>
        let origin = "https://gate.example"
        #expect(Redirect.location(publicOrigin: origin, target: "/a/b?c=d#e") == "https://gate.example/a/b?c=d#e")
        for hostile in ["http://evil.example/x", "*", "evil.example", "", "/x\r\nSet-Cookie: a=b", "/x y"] {
            #expect(Redirect.location(publicOrigin: origin, target: hostile) == "https://gate.example/", "\(hostile)")
        }
        // A path that looks like another host stays a path on the gateway's.
        #expect(Redirect.location(publicOrigin: origin, target: "//evil.example/x") == "https://gate.example//evil.example/x")
    }

    @Test func theConfigurationNamesOneKeyAndAKnownVersion() throws {
        #expect(try Self.problems(["private_key_file": "/k.pem"]) == ["listen.tls.certificate_file"])
        #expect(try Self.problems(["certificate_file": "/c.pem"]).contains("listen.tls.private_key_file"))
        // The key's path may come from the environment, as a secret's file does; the files must exist.
        #expect(
            try Self.problems(["certificate_file": "/c.pem"], ["GATEHOUSE_LISTEN_TLS_PRIVATE_KEY_FILE": "/k.pem"])
                == ["listen.tls.certificate_file", "listen.tls.private_key_file"])
        #expect(
            try Self.problems(["certificate_file": "/c.pem", "private_key_file": "/k.pem", "minimum_version": "1.1"]).contains(
                "listen.tls.minimum_version"))
        #expect(
            try Self.problems(["certificate_file": "/c.pem", "private_key_file": "/k.pem"], ["GATEHOUSE_LISTEN_REDIRECT_HTTP_PORT": "0"]).contains(
                "listen.redirect_http_port"))
        // The key itself has no key: only its file.
        #expect(
            try Self.problems(["certificate_file": "/c.pem", "private_key_file": "/k.pem", "private_key": "-----BEGIN"]).contains(
                "listen.tls.private_key"))
    }

    @Test func servedOverHTTPSAndReplacedWithoutARestart() async throws {
        let files = try Files()
        let first = try DevelopmentCertificates.make()
        let second = try DevelopmentCertificates.make()
        try files.write(first)
        let port = try await LiveGateway.freePort()
        let redirectPort = try await LiveGateway.freePort()
        var configuration = try LiveGateway.developmentConfiguration(port: port)
        configuration.listen.tls = files.configuration
        configuration.listen.redirectHTTPPort = redirectPort
        configuration.publicURL = URL(string: "https://localhost:\(port)")!
        var logger = Logger(label: "tls-test")
        logger.logLevel = .critical
        let built = try await GatehouseApplication.build(configuration: configuration, logger: logger)
        let group = built.serviceGroup(signals: [])
        let trustsFirst = try Self.client(trusting: first)
        let trustsSecond = try Self.client(trusting: second)
        let url = "https://localhost:\(port)/healthz"
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            defer { Task { await group.triggerGracefulShutdown() } }
            var answered = false
            for _ in 0..<100 where !answered {
                answered = (try? await Self.status(trustsFirst, url)) == 200
                if !answered { try await Task.sleep(for: .milliseconds(50)) }
            }
            #expect(answered)

            // The plain-HTTP port sends members to https, the same path and query; it still answers /healthz.
            let plain = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(redirectConfiguration: .disallow))
            defer { Task { try? await plain.shutdown() } }
            for (method, path, status) in [
                (HTTPMethod.GET, "/apps/wiki/page?x=1", 301), (.HEAD, "/", 301), (.POST, "/upgrade/phone", 308), (.GET, "/healthz/x", 301),
            ] {
                var request = HTTPClientRequest(url: "http://127.0.0.1:\(redirectPort)\(path)")
                request.method = method
                let response = try await plain.execute(request, timeout: .seconds(5))
                #expect(Int(response.status.code) == status, "\(method) \(path)")
                #expect(response.headers.first(name: "Location") == "https://localhost:\(port)\(path)")
                #expect(response.headers["Strict-Transport-Security"].isEmpty && response.headers["Set-Cookie"].isEmpty)
            }
            let health = try await plain.execute(HTTPClientRequest(url: "http://127.0.0.1:\(redirectPort)/healthz"), timeout: .seconds(5))
            #expect(health.status == .ok)
            // A client that does not trust the authority gets no answer; plain HTTP on the TLS port neither.
            #expect((try? await Self.status(trustsSecond, url)) == nil)
            #expect((try? await Self.status(trustsFirst, "http://localhost:\(port)/healthz")) == nil)

            // The second pair in the files, read again: new handshakes use it; the connection open before goes on.
            try files.write(second)
            #expect(try #require(built.listenerTLS).reload())
            #expect(try await Self.status(trustsSecond, url) == 200)
            #expect(try await Self.status(trustsFirst, url) == 200)  // its kept-alive connection, from before
            let fresh = try Self.client(trusting: first)
            #expect((try? await Self.status(fresh, url)) == nil)  // a new handshake gets the second pair

            // A broken pair keeps the one in use, and says so in the metrics.
            try "garbage".write(toFile: files.key, atomically: true, encoding: .utf8)
            #expect(try #require(built.listenerTLS).reload() == false)
            let afterward = try Self.client(trusting: second)
            #expect(try await Self.status(afterward, url) == 200)
            // (The files are watched too: the changes above may have been read a second time.)
            let samples = MetricsTests.samples(built.metrics.exposition())
            #expect((samples[#"gatehouse_tls_reloads_total{result="failed"}"#] ?? 0) >= 1)
            #expect((samples[#"gatehouse_tls_reloads_total{result="succeeded"}"#] ?? 0) >= 1)
            #expect(
                (samples["gatehouse_tls_certificate_expiry_timestamp_seconds"] ?? 0) > Date().addingTimeInterval(300 * 86_400).timeIntervalSince1970)

            // A renewal written to the files is picked up without a signal.
            let third = try DevelopmentCertificates.make()
            try files.write(third)
            let trustsThird = try Self.client(trusting: third)
            var renewed = false
            for _ in 0..<60 where !renewed {
                try await Task.sleep(for: .milliseconds(250))
                renewed = (try? await Self.status(trustsThird, url)) == 200
            }
            #expect(renewed)
            for client in [trustsFirst, trustsSecond, fresh, afterward, trustsThird] { try await client.shutdown() }
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
    }

    /// Over HTTPS/1.1 a proxied page is the data plane's, as over plain HTTP, and WebSockets are relayed (`wss`).
    @Test func proxiedPagesAndWebSocketsOverHTTPS() async throws {
        let files = try Files()
        try files.write(try DevelopmentCertificates.make())
        try await EchoUpstream.run { upstream in
            let closedPort = try await LiveGateway.freePort()
            try await LiveGateway.run(tls: files.configuration, configure: { $0.apps = ProxyTests.apps(upstream, unreachablePort: closedPort) }) {
                gateway in
                #expect(gateway.origin.hasPrefix("https://"))
                let cookies = try await ProxyTests.signedIn(gateway)
                let page = try await gateway.get("/apps/echo/html", cookies: cookies, headers: [("Sec-Fetch-Dest", "document")])
                #expect(page.status == 200 && page.body.contains("<gatehouse-bar"))
                #expect(gateway.servedByDataPlane("echo") == 1)
                let messages = try await ProxyTests.webSocket(gateway, cookies: cookies, send: ["over TLS"])
                #expect(messages.last == "echo: over TLS")
            }
        }
    }

    /// Over HTTP/2 each stream passes the data plane too: a proxied page is its answer (the app hears the gateway's
    /// own HTTP/1.1 request, nothing the client claimed), streams run side by side on one connection, a failure is
    /// its page, and a body with a length goes to the app from the stream's DATA frames; sign-in goes the application's
    /// way.
    @Test func proxiedPagesOverHTTP2AreTheDataPlanes() async throws {
        let files = try Files()
        try files.write(try DevelopmentCertificates.make())
        try await EchoUpstream.run { upstream in
            let closedPort = try await LiveGateway.freePort()
            try await LiveGateway.run(
                tls: files.configuration, http2: true, configure: { $0.apps = ProxyTests.apps(upstream, unreachablePort: closedPort) }
            ) {
                gateway in
                let cookies = try await ProxyTests.signedIn(gateway)
                let reply = try await gateway.get("/apps/echo/echo/x?q=1", cookies: cookies, headers: ProxyTests.hostileRequestHeaders)
                #expect(reply.status == 200 && reply.version == .http2)
                #expect(gateway.servedByDataPlane("echo") == 1)
                let received = try ProxyTests.report(reply)
                #expect(received.path == "/echo/x?q=1")
                #expect(received.headers["host"] == ["127.0.0.1:\(upstream.port)"])
                #expect(received.headers["x-forwarded-proto"] == ["https"])
                #expect(received.headers["x-forwarded-user"] == [DevelopmentAccounts.all[0].sub])
                // HTTP/2 has no `Connection` (the client drops it), so what it lists is just a header there.
                for (name, _) in ProxyTests.hostileRequestHeaders
                where !name.lowercased().hasPrefix("x-forwarded-") && name != "Forwarded" && name != "X-Secret" {
                    #expect(received.headers[name.lowercased()] == nil, "\(name)")
                }
                #expect(received.headers["cookie"] == nil)

                let page = try await gateway.get("/apps/echo/html", cookies: cookies, headers: [("Sec-Fetch-Dest", "document")])
                #expect(page.status == 200 && page.version == .http2 && page.body.contains("<gatehouse-bar"))
                let streams = try await withThrowingTaskGroup(of: Int.self) { group in
                    for index in 0..<24 { group.addTask { try await gateway.get("/apps/echo/echo/\(index)", cookies: cookies).status } }
                    return try await group.reduce(into: [Int]()) { $0.append($1) }
                }
                #expect(streams == Array(repeating: 200, count: 24))
                #expect(gateway.servedByDataPlane("echo") == 26)

                let down = try await gateway.get("/apps/down/", cookies: cookies, headers: [("Accept", "text/html")])
                #expect(down.status == 502 && down.version == .http2 && down.body.contains("The app cannot be reached"))
                let posted = try await gateway.send(
                    .POST, "/apps/echo/echo/", cookies: cookies, headers: [], body: String(repeating: "x", count: 5000))
                #expect(posted.status == 200 && posted.version == .http2)
                #expect(try ProxyTests.report(posted).bodyBytes == 5000)
                #expect(gateway.servedByDataPlane("echo") == 27)
            }
        }
    }

    static func client(trusting pair: DevelopmentCertificates) throws -> HTTPClient {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(pair.authorityPEM.utf8)))
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(tlsConfiguration: tls))
    }

    static func status(_ client: HTTPClient, _ url: String) async throws -> Int {
        let response = try await client.execute(HTTPClientRequest(url: url), timeout: .seconds(5))
        _ = try await response.body.collect(upTo: 1 << 20)
        return Int(response.status.code)
    }
}

extension Result where Failure == ConfigurationError {
    var problems: [ConfigurationProblem] {
        if case .failure(let error) = self { return error.problems }
        return []
    }
}
