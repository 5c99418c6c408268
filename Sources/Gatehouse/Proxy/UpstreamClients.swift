import AsyncHTTPClient
import Foundation

/// The pooled HTTP clients requests to apps go through, one per (name, checked address): each connects a name only
/// to the address `UpstreamPolicy` checked, while `Host` and the TLS server name stay the name (async-http-client's
/// DNS override). Literal addresses need no override and share the plain client. An app with TLS settings of its own
/// (`UpstreamTLS`: its authorities, a client certificate) has clients of its own, never shared with another app.
public actor UpstreamClients {
    let plain: HTTPClient
    let configuration: HTTPClient.Configuration
    /// Clients retired when a name's answer changed are shut down this much later, after their requests finished.
    let retirementDelay: Duration
    private var pinned: [String: HTTPClient] = [:]
    private var recentlyUsed: [String] = []
    /// Names with several addresses (round-robin DNS) get a client per address, up to this many in all.
    static let maximumPinned = 64

    public init(plain: HTTPClient, configuration: HTTPClient.Configuration, retirementDelay: Duration) {
        self.plain = plain
        self.configuration = configuration
        self.retirementDelay = retirementDelay
    }

    public func client(for target: UpstreamTarget) -> HTTPClient {
        guard target.address != nil || target.tls != nil else { return plain }
        let key = [target.tls?.app ?? "", target.host, target.address ?? ""].joined(separator: " ")
        recentlyUsed.removeAll { $0 == key }
        recentlyUsed.append(key)
        if let client = pinned[key] { return client }
        var configuration = configuration
        if let address = target.address { configuration.dnsOverride = [target.host: address] }
        if let tls = target.tls { configuration.tlsConfiguration = tls.configuration }
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        pinned[key] = client
        if recentlyUsed.count > Self.maximumPinned {
            let retired = recentlyUsed.removeFirst()
            if let old = pinned.removeValue(forKey: retired) {
                let delay = retirementDelay
                Task {
                    try? await Task.sleep(for: delay)
                    try? await old.shutdown()
                }
            }
        }
        return client
    }

    public func shutdown() async {
        for client in pinned.values { try? await client.shutdown() }
        pinned = [:]
    }
}
