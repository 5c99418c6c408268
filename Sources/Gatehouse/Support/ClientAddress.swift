import Foundation
import GatehouseCore
import HTTPTypes

/// Who sent a request: the connection's peer, unless the peer is a proxy the operator trusts (a load balancer), in
/// which case the nearest address in `X-Forwarded-For` that is not a trusted proxy. Anything left of that address
/// came from the client itself and is never believed.
struct ClientAddressResolver: Sendable {
    let trustedProxies: [IPNetwork]

    /// The addresses that fail to parse as `listen.trusted_proxies` entries, for the configuration check.
    static func invalidEntries(_ entries: [String]) -> [String] {
        entries.filter { IPNetwork($0) == nil }
    }

    init(trustedProxies entries: [String]) {
        trustedProxies = entries.compactMap(IPNetwork.init)
    }

    var trustsAnyProxy: Bool { !trustedProxies.isEmpty }

    func isTrusted(_ address: IPAddress) -> Bool {
        trustedProxies.contains { $0.contains(address) }
    }

    /// The client's address; `forwardedFor` is every `X-Forwarded-For` field in order.
    func resolve(peer: String?, forwardedFor: [String]) -> String? {
        guard let peer, var nearest = IPAddress(peer), isTrusted(nearest) else { return peer }
        let hops = forwardedFor.flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces) }
        for hop in hops.reversed() {
            // A hop that is not an address was not written by a proxy we trust: stop at the last one that was.
            guard let address = IPAddress(hop) else { break }
            nearest = address
            if !isTrusted(address) { break }
        }
        return nearest.description
    }
}

extension HTTPField.Name {
    static let xForwardedFor = Self("X-Forwarded-For")!
}
