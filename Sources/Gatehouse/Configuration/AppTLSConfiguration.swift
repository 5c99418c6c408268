import Foundation

/// An app's own TLS settings (`apps[].tls`), each a PEM file.
public struct AppTLSConfiguration: Sendable, Equatable {
    /// The authorities the app's certificate must chain to, instead of the system's (an organization's own CA).
    public var caFile: String?
    /// The gateway's certificate and key for an app that asks for one (mutual TLS).
    public var certificateFile: String?
    public var privateKeyFile: String?

    public init(caFile: String? = nil, certificateFile: String? = nil, privateKeyFile: String? = nil) {
        self.caFile = caFile
        self.certificateFile = certificateFile
        self.privateKeyFile = privateKeyFile
    }
}
