import Foundation

/// The members' listener's certificate and key (PEM), read again on `SIGHUP`.
public struct ListenTLSConfiguration: Sendable, Equatable {
    public enum MinimumVersion: String, Sendable, CaseIterable {
        case tls12 = "1.2"
        case tls13 = "1.3"
    }

    /// The leaf certificate first, then the chain that leads to the members' trusted roots.
    public var certificateFile: String
    /// The key's PEM file (RSA, ECDSA or Ed25519): the key itself is never in the configuration.
    public var privateKeyFile: String
    public var minimumVersion: MinimumVersion
    /// HTTP/2 offered by ALPN before HTTP/1.1.
    public var http2: Bool

    public init(certificateFile: String, privateKeyFile: String, minimumVersion: MinimumVersion = .tls12, http2: Bool = true) {
        self.certificateFile = certificateFile
        self.privateKeyFile = privateKeyFile
        self.minimumVersion = minimumVersion
        self.http2 = http2
    }
}
