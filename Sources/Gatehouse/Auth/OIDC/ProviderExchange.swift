import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// One request of the relying party's to its provider (discovery, keys, token, userinfo).
public struct ProviderRequest: Sendable {
    public var method: HTTPMethod = .GET
    public var url: String
    public var headers: HTTPHeaders = [:]
    public var body: ByteBuffer?

    public init(url: String) { self.url = url }
}

/// How a provider is asked: over HTTP (`over(_:)`), or, for development mode's built-in provider, at its routes
/// in-process (`DevelopmentIdentityProvider.exchange`). The answer's status and body (at most
/// `OIDCClient.maximumResponseSize`).
public typealias ProviderExchange = @Sendable (ProviderRequest, TimeAmount) async throws -> (status: HTTPResponseStatus, body: Data)

public enum ProviderExchanges {
    /// Over HTTP with `http` (the provider's TLS settings are `http`'s).
    public static func over(_ http: HTTPClient) -> ProviderExchange {
        { request, timeout in
            var outgoing = HTTPClientRequest(url: request.url)
            outgoing.method = request.method
            outgoing.headers = request.headers
            if let body = request.body { outgoing.body = .bytes(body) }
            let response = try await http.execute(outgoing, timeout: timeout)
            return (response.status, Data(try await response.body.collect(upTo: OIDCClient.maximumResponseSize).readableBytesView))
        }
    }
}
