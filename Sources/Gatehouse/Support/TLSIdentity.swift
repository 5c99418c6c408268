import Foundation
import NIOSSL
import X509

/// A certificate chain and its key, read from PEM and checked before they are used: readable, a key that is the leaf
/// certificate's, a leaf in date. Every problem is named with the configuration key that points at it. The members'
/// listener serves with one (`ListenerTLS`); an app may ask for one as a client certificate (`UpstreamTLS`).
struct TLSIdentity: Sendable {
    let chain: [NIOSSLCertificate]
    let key: NIOSSLPrivateKey
    let notValidAfter: Date

    /// Reads and checks the listener's pair; all the problems at once when there are any.
    static func load(_ configuration: ListenTLSConfiguration, now: Date = Date()) -> Result<TLSIdentity, ConfigurationError> {
        load(
            certificateFile: configuration.certificateFile, certificateKeyPath: "listen.tls.certificate_file",
            privateKeyFile: configuration.privateKeyFile, privateKeyKeyPath: "listen.tls.private_key_file", now: now)
    }

    /// Reads and checks a certificate (then its chain) and its key, each problem named with its key path.
    static func load(
        certificateFile: String, certificateKeyPath: String, privateKeyFile: String, privateKeyKeyPath: String, now: Date = Date()
    ) -> Result<TLSIdentity, ConfigurationError> {
        var problems: [ConfigurationProblem] = []
        let certificatePath = certificateKeyPath
        let keyPath = privateKeyKeyPath

        var leaf: Certificate?
        var chain: [NIOSSLCertificate] = []
        if let text = read(certificateFile, keyPath: certificatePath, problems: &problems) {
            do {
                chain = try NIOSSLCertificate.fromPEMBytes(Array(text.utf8))
                guard let first = chain.first else { throw TLSIdentityError.noCertificate }
                leaf = try Certificate(derEncoded: try first.toDERBytes())
            } catch {
                problems.append(ConfigurationProblem(certificatePath, "\(certificateFile) holds no PEM certificate (\(error))"))
            }
        }
        var key: Certificate.PrivateKey?
        var sslKey: NIOSSLPrivateKey?
        if let keyText = read(privateKeyFile, keyPath: keyPath, problems: &problems) {
            do {
                key = try Certificate.PrivateKey(pemEncoded: keyText)
                sslKey = try NIOSSLPrivateKey(bytes: Array(keyText.utf8), format: .pem)
            } catch {
                problems.append(ConfigurationProblem(keyPath, "holds no PEM private key (RSA, ECDSA or Ed25519) that can be read (\(error))"))
            }
        }
        if let leaf, let key, key.publicKey != leaf.publicKey {
            problems.append(ConfigurationProblem(keyPath, "is not the key of the certificate in \(certificateFile)"))
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

    static func read(_ path: String, keyPath: String, problems: inout [ConfigurationProblem]) -> String? {
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
