import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOSSL
import X509

/// The members' listener's certificate chain and key, read from PEM and checked before they are used: readable, a
/// key that is the leaf certificate's, a leaf in date. Every problem is named with the key that points at it.
struct TLSIdentity: Sendable {
    let chain: [NIOSSLCertificate]
    let key: NIOSSLPrivateKey
    let notValidAfter: Date

    /// Reads and checks the pair; all the problems at once when there are any.
    static func load(_ configuration: ListenTLSConfiguration, now: Date = Date()) -> Result<TLSIdentity, ConfigurationError> {
        var problems: [ConfigurationProblem] = []
        let certificatePath = "listen.tls.certificate_file"
        let keyPath = "listen.tls.private_key_file"

        var leaf: Certificate?
        var chain: [NIOSSLCertificate] = []
        if let text = read(configuration.certificateFile, keyPath: certificatePath, problems: &problems) {
            do {
                chain = try NIOSSLCertificate.fromPEMBytes(Array(text.utf8))
                guard let first = chain.first else { throw TLSIdentityError.noCertificate }
                leaf = try Certificate(derEncoded: try first.toDERBytes())
            } catch {
                problems.append(ConfigurationProblem(certificatePath, "\(configuration.certificateFile) holds no PEM certificate (\(error))"))
            }
        }
        var key: Certificate.PrivateKey?
        var sslKey: NIOSSLPrivateKey?
        if let keyText = read(configuration.privateKeyFile, keyPath: keyPath, problems: &problems) {
            do {
                key = try Certificate.PrivateKey(pemEncoded: keyText)
                sslKey = try NIOSSLPrivateKey(bytes: Array(keyText.utf8), format: .pem)
            } catch {
                problems.append(ConfigurationProblem(keyPath, "holds no PEM private key (RSA, ECDSA or Ed25519) that can be read (\(error))"))
            }
        }
        if let leaf, let key, key.publicKey != leaf.publicKey {
            problems.append(ConfigurationProblem(keyPath, "is not the key of the certificate in \(configuration.certificateFile)"))
        }
        if let leaf {
            if leaf.notValidAfter <= now {
                problems.append(
                    ConfigurationProblem(certificatePath, "the certificate expired on \(ISO8601DateFormatter().string(from: leaf.notValidAfter))"))
            } else if leaf.notValidBefore > now {
                problems.append(
                    ConfigurationProblem(
                        certificatePath, "the certificate is not valid before \(ISO8601DateFormatter().string(from: leaf.notValidBefore))"))
            }
        }
        guard problems.isEmpty, let leaf, let sslKey else { return .failure(ConfigurationError(problems: problems)) }
        return .success(TLSIdentity(chain: chain, key: sslKey, notValidAfter: leaf.notValidAfter))
    }

    private static func read(_ path: String, keyPath: String, problems: inout [ConfigurationProblem]) -> String? {
        guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) else {
            problems.append(ConfigurationProblem(keyPath, "cannot read \(path)"))
            return nil
        }
        return text
    }

    /// The server side of TLS with this pair: the configured minimum version, and the protocols offered by ALPN.
    func context(minimumVersion: ListenTLSConfiguration.MinimumVersion, protocols: [String]) throws -> NIOSSLContext {
        var configuration = TLSConfiguration.makeServerConfiguration(certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        configuration.minimumTLSVersion = minimumVersion == .tls13 ? .tlsv13 : .tlsv12
        configuration.applicationProtocols = protocols
        return try NIOSSLContext(configuration: configuration)
    }
}

enum TLSIdentityError: Error, CustomStringConvertible {
    case noCertificate
    var description: String { "no CERTIFICATE block" }
}

/// The TLS context new connections of the members' listener use, replaced by `reload()` (on `SIGHUP`): handshakes
/// after it use the new pair, connections already open go on with theirs, and a pair that does not load keeps the old
/// one (said in the log and in `gatehouse_tls_reloads_total{result="failed"}`).
final class ListenerTLS: Sendable {
    /// What ALPN offers, in order of preference.
    static func protocols(_ configuration: ListenTLSConfiguration) -> [String] { configuration.http2 ? ["h2", "http/1.1"] : ["http/1.1"] }

    let configuration: ListenTLSConfiguration
    private let current: NIOLockedValueBox<(context: NIOSSLContext, notValidAfter: Date)>
    /// The certificates after the leaf in the file first read (its chain, and a development authority's own root).
    let chainAboveLeaf: [NIOSSLCertificate]
    private let reloads: NIOLockedValueBox<(succeeded: Int, failed: Int)> = .init((0, 0))
    private let logger: Logger

    init(configuration: ListenTLSConfiguration, logger: Logger) throws {
        self.configuration = configuration
        self.logger = logger
        let identity = try TLSIdentity.load(configuration).get()
        chainAboveLeaf = Array(identity.chain.dropFirst())
        current = NIOLockedValueBox(
            (try identity.context(minimumVersion: configuration.minimumVersion, protocols: Self.protocols(configuration)), identity.notValidAfter))
    }

    var context: NIOSSLContext { current.withLockedValue { $0.context } }
    var notValidAfter: Date { current.withLockedValue { $0.notValidAfter } }
    var reloadCounts: (succeeded: Int, failed: Int) { reloads.withLockedValue { $0 } }

    /// The files' modification times and sizes: what `TLSReloader` compares to notice a renewal.
    func filesState() -> [String] {
        [configuration.certificateFile, configuration.privateKeyFile].map { path in
            let attributes = try? FileManager.default.attributesOfItem(atPath: path)
            let modified = (attributes?[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0
            return "\(path) \(modified) \(attributes?[.size] as? Int ?? -1)"
        }
    }

    /// Reads the pair again; true when the new one is in use.
    @discardableResult
    func reload() -> Bool {
        do {
            let identity = try TLSIdentity.load(configuration).get()
            let context = try identity.context(minimumVersion: configuration.minimumVersion, protocols: Self.protocols(configuration))
            current.withLockedValue { $0 = (context, identity.notValidAfter) }
            reloads.withLockedValue { $0.succeeded += 1 }
            logger.notice(
                "TLS certificate reloaded", metadata: ["not_valid_after": .string(ISO8601DateFormatter().string(from: identity.notValidAfter))])
            return true
        } catch {
            reloads.withLockedValue { $0.failed += 1 }
            logger.error("TLS certificate not reloaded: the one loaded before stays in use", metadata: ["error": .string("\(error)")])
            return false
        }
    }
}
