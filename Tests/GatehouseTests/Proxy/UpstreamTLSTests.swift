import AsyncHTTPClient
import Foundation
import GatehouseCore
import Hummingbird
import HummingbirdTLS
import Logging
import NIOSSL
import ServiceLifecycle
import Testing

@testable import Gatehouse

/// TLS towards apps (`apps[].tls`): an app behind mutual TLS under the organization's own authority is reached with
/// the gateway's client certificate and that authority only, its certificate checked against its name while the
/// connection goes to the address the allowlist checked; without the certificate, under another authority or with a
/// certificate for another name, the member gets the gateway's error page.
@Suite struct UpstreamTLSTests {
    /// `mtls.test` resolves nowhere on this machine but here: the gateway must connect to the checked address.
    struct Pinned: HostResolver {
        func addresses(of host: String) async throws -> [ResolvedAddress] {
            guard host.hasSuffix(".test") else { throw ProxyError.upstreamUnreachable(host) }
            return [ResolvedAddress("127.0.0.1", .loopback)]
        }
    }

    struct Files {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-upstream-tls-\(UUID().uuidString)")
        func write(_ name: String, _ text: String) throws -> String {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let path = folder.appendingPathComponent(name).path
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }
    }

    @Test func anAppBehindMutualTLSIsReachedWithItsAuthorityAndTheGatewaysCertificateOnly() async throws {
        let server = try DevelopmentCertificates.make(names: ["mtls.test"])
        let elsewhere = try DevelopmentCertificates.make(names: ["other.test"])
        let client = try DevelopmentCertificates.make(names: ["gatehouse"])
        let files = Files()
        let serverCA = try files.write("server-ca.pem", server.authorityPEM)
        let otherCA = try files.write("other-ca.pem", elsewhere.authorityPEM)
        let clientCertificate = try files.write("client.pem", client.certificatePEM)
        let clientKey = try files.write("client-key.pem", client.privateKeyPEM)

        // The app: HTTPS with its certificate for mtls.test, asking every client for a certificate of the client
        // authority.
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMBytes(Array(server.certificatePEM.utf8)).map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(server.privateKeyPEM.utf8), format: .pem)))
        tls.certificateVerification = .noHostnameVerification
        tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(client.authorityPEM.utf8)))
        let router = Router()
        router.get("hello") { _, _ in "hello over mutual TLS" }
        let port = try await LiveGateway.freePort()
        var logger = Logger(label: "mtls-upstream")
        logger.logLevel = .critical
        let app = Application(
            router: router, server: try .tls(.http1(), tlsConfiguration: tls), configuration: .init(address: .hostname("127.0.0.1", port: port)),
            logger: logger)
        let upstream = "https://mtls.test:\(port)/"
        func entry(_ slug: String, _ appTLS: AppTLSConfiguration?, host: String = "mtls.test") -> AppConfiguration {
            AppConfiguration(slug: slug, name: slug, upstream: URL(string: "https://\(host):\(port)/")!, tls: appTLS)
        }
        let apps = [
            entry("mtls", AppTLSConfiguration(caFile: serverCA, certificateFile: clientCertificate, privateKeyFile: clientKey)),
            entry("no-certificate", AppTLSConfiguration(caFile: serverCA)),
            entry("other-authority", AppTLSConfiguration(caFile: otherCA, certificateFile: clientCertificate, privateKeyFile: clientKey)),
            entry("system-authorities", nil),
            entry(
                "wrong-name", AppTLSConfiguration(caFile: serverCA, certificateFile: clientCertificate, privateKeyFile: clientKey), host: "wrong.test"
            ),
        ]
        #expect(upstream.hasPrefix("https://mtls.test"))
        let group = ServiceGroup(configuration: .init(services: [app], logger: logger))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            try await LiveGateway.run(
                configure: {
                    $0.allowlist += ["mtls.test", "wrong.test"]
                    $0.apps = apps
                }, hostResolver: Pinned()
            ) { gateway in
                let cookies = try await ProxyTests.signedIn(gateway)
                var reply = try await gateway.get("/apps/mtls/hello", cookies: cookies)
                for _ in 0..<50 where reply.status != 200 {  // the app may still be starting
                    try await Task.sleep(for: .milliseconds(100))
                    reply = try await gateway.get("/apps/mtls/hello", cookies: cookies)
                }
                #expect(reply.status == 200 && reply.body == "hello over mutual TLS", "\(reply.status) \(reply.body.prefix(300))")
                for slug in ["no-certificate", "other-authority", "system-authorities", "wrong-name"] {
                    let refused = try await gateway.get("/apps/\(slug)/hello", cookies: cookies, headers: [("Sec-Fetch-Dest", "document")])
                    #expect(refused.status == 502, "\(slug)")
                    #expect(!refused.body.contains("hello over mutual TLS"), "\(slug)")
                }
            }
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
    }

    @Test func theAppsTLSSettingsAreCheckedWithTheirKeyPaths() throws {
        let files = Files()
        let pair = try DevelopmentCertificates.make()
        let certificate = try files.write("c.pem", pair.certificatePEM)
        let key = try files.write("k.pem", pair.privateKeyPEM)
        let otherKey = try files.write("o.pem", try DevelopmentCertificates.make().privateKeyPEM)
        func problems(_ tls: AppTLSConfiguration) -> [String] {
            if case .failure(let error) = UpstreamTLS.load(tls, keyPath: "apps[0].tls") { return error.problems.map(\.keyPath) }
            return []
        }
        #expect(problems(AppTLSConfiguration(caFile: "/nonexistent.pem")) == ["apps[0].tls.ca_file"])
        #expect(problems(AppTLSConfiguration(caFile: key)) == ["apps[0].tls.ca_file"])  // a key is no authority
        #expect(problems(AppTLSConfiguration(certificateFile: certificate, privateKeyFile: otherKey)) == ["apps[0].tls.private_key_file"])
        #expect(problems(AppTLSConfiguration(caFile: certificate, certificateFile: certificate, privateKeyFile: key)).isEmpty)

        var configuration = try LiveGateway.developmentConfiguration(port: 8080)
        configuration.apps = [
            AppConfiguration(
                slug: "plain", name: "Plain", upstream: URL(string: "http://127.0.0.1:9/")!, tls: AppTLSConfiguration(caFile: certificate))
        ]
        #expect(configuration.validate().map(\.keyPath).contains("apps[0].tls"))
    }
}
