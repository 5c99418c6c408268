import Foundation
import Hummingbird
import HummingbirdTLS
import Logging
import NIOSSL
import ServiceLifecycle
import Testing

@testable import Gatehouse

/// An identity provider behind the organization's own certificate authority: reached with `oidc.tls.ca_file`,
/// refused without it (the system's authorities do not know it) and with another authority; `check-config` reports a
/// file that holds no certificate.
@Suite struct ProviderTLSTests {
    @Test func aProviderOnAPrivateAuthorityIsTrustedThroughCAFileOnly() async throws {
        let provider = try DevelopmentCertificates.make(names: ["localhost"])
        let other = try DevelopmentCertificates.make(names: ["localhost"])
        let files = UpstreamTLSTests.Files()
        defer { try? FileManager.default.removeItem(at: files.folder) }
        let authority = try files.write("provider-ca.pem", provider.authorityPEM)
        let otherAuthority = try files.write("other-ca.pem", other.authorityPEM)
        let notACertificate = try files.write("garbage.pem", "not a certificate\n")

        let tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMBytes(Array(provider.certificatePEM.utf8)).map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(provider.privateKeyPEM.utf8), format: .pem)))
        let port = try await LiveGateway.freePort()
        let issuer = "https://localhost:\(port)"
        let router = Router()
        router.get(".well-known/openid-configuration") { _, _ -> Response in
            try JSONResponse.make([
                "issuer": issuer, "authorization_endpoint": issuer + "/authorize", "token_endpoint": issuer + "/token",
                "jwks_uri": issuer + "/jwks",
            ])
        }
        var logger = Logger(label: "private-provider")
        logger.logLevel = .critical
        let app = Application(
            router: router, server: try .tls(.http1(), tlsConfiguration: tls), configuration: .init(address: .hostname("127.0.0.1", port: port)),
            logger: logger)
        let serviceGroup = ServiceGroup(services: [app], logger: logger)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await serviceGroup.run() }
            defer { group.cancelAll() }
            /// Where the sign-in start sends the browser with `caFile` as the provider's authorities.
            func signInStart(_ caFile: String?) async throws -> LiveGateway.Reply {
                try await LiveGateway.run(configure: { configuration in
                    configuration.oidc = OIDCConfiguration(
                        issuer: issuer, clientID: "gatehouse", clientSecret: "secret", timeoutSeconds: 5,
                        tls: caFile.map { AppTLSConfiguration(caFile: $0) })
                }) { gateway in try await gateway.get("/signin/start", cookies: [:]) }
            }
            let trusted = try await signInStart(authority)
            #expect(trusted.status == 303 && trusted.location?.hasPrefix(issuer + "/authorize?") == true, "\(trusted.status)")
            for refused in [nil, otherAuthority] {
                let reply = try await signInStart(refused)
                #expect(reply.location?.hasPrefix(issuer) != true, "the provider was reached with \(refused ?? "the system's authorities")")
            }
        }
        // A file that holds no certificate is a configuration problem, with its key path.
        var configuration = try LiveGateway.developmentConfiguration(port: 8080)
        configuration.oidc.tls = AppTLSConfiguration(caFile: notACertificate)
        #expect(configuration.validate().map(\.keyPath).contains("oidc.tls.ca_file"))
    }
}
