import Foundation
import NIOSSL

/// TLS towards one https app (`apps[].tls`): its certificate checked against the authorities the operator names
/// (instead of the system's) and against the app's name, and the gateway's client certificate for an app that asks
/// for one. The connection still goes to the address the allowlist checked (`UpstreamTarget.address`).
public final class UpstreamTLS: Sendable, Equatable {
    /// The app it belongs to: clients are kept per app, so that one app's client certificate never goes to another.
    let app: String
    let configuration: TLSConfiguration
    /// For the WebSocket relay, which makes its own connections.
    let context: NIOSSLContext

    init(app: String, configuration: TLSConfiguration) throws {
        self.app = app
        self.configuration = configuration
        context = try NIOSSLContext(configuration: configuration)
    }

    public static func == (left: UpstreamTLS, right: UpstreamTLS) -> Bool { left === right }

    /// The client configuration `tls` describes, or every problem with its files.
    static func load(_ tls: AppTLSConfiguration, keyPath: String, now: Date = Date()) -> Result<TLSConfiguration, ConfigurationError> {
        var configuration = TLSConfiguration.makeClientConfiguration()
        var problems: [ConfigurationProblem] = []
        if let caFile = tls.caFile, let text = TLSIdentity.read(caFile, keyPath: "\(keyPath).ca_file", problems: &problems) {
            do {
                let authorities = try NIOSSLCertificate.fromPEMBytes(Array(text.utf8))
                if authorities.isEmpty { throw TLSIdentityError.noCertificate }
                configuration.trustRoots = .certificates(authorities)
            } catch {
                problems.append(ConfigurationProblem("\(keyPath).ca_file", "\(caFile) holds no PEM certificate (\(error))"))
            }
        }
        if let certificateFile = tls.certificateFile, let privateKeyFile = tls.privateKeyFile {
            switch TLSIdentity.load(
                certificateFile: certificateFile, certificateKeyPath: "\(keyPath).certificate_file", privateKeyFile: privateKeyFile,
                privateKeyKeyPath: "\(keyPath).private_key_file", now: now)
            {
            case .success(let identity):
                configuration.certificateChain = identity.chain.map { .certificate($0) }
                configuration.privateKey = .privateKey(identity.key)
            case .failure(let error):
                problems += error.problems
            }
        }
        return problems.isEmpty ? .success(configuration) : .failure(ConfigurationError(problems: problems))
    }

    /// Every app's own TLS, by slug.
    static func make(for apps: [AppConfiguration]) throws -> [String: UpstreamTLS] {
        var made: [String: UpstreamTLS] = [:]
        for app in apps {
            guard let tls = app.tls else { continue }
            made[app.slug] = try UpstreamTLS(app: app.slug, configuration: try load(tls, keyPath: "apps.\(app.slug).tls").get())
        }
        return made
    }
}
