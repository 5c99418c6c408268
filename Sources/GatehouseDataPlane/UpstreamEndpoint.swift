import NIOCore

/// Where an upstream connection goes: the one address the allowlist checked (the connection never resolves the name
/// again, so a second DNS answer cannot send it elsewhere) and the name the app knows itself by (`Host`).
public struct UpstreamEndpoint: Hashable, Sendable, CustomStringConvertible {
    public var address: SocketAddress
    public var host: String

    public init(address: SocketAddress, host: String) {
        self.address = address
        self.host = host
    }

    public var description: String { "\(host) at \(address)" }
}
