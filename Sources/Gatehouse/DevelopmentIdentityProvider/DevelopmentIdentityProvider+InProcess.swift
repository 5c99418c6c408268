import Foundation
import GatehouseCore
import HTTPTypes
import Hummingbird
import NIOCore
import NIOHTTP1

extension DevelopmentIdentityProvider {
    /// The gateway's own requests to this provider (discovery, keys, token, userinfo), answered in-process by the same
    /// handlers that answer them over HTTP. Development mode's gateway is its own provider, so it needs neither the
    /// network nor trust in its listener's certificate, however that was issued: a self-signed one, one of `gatehouse
    /// dev --tls`'s authority, or one of an authority only the browser trusts (mkcert, an organization's CA), whose file
    /// holds no root to trust.
    public var exchange: ProviderExchange {
        { request, _ in
            guard request.url.hasPrefix(issuer + "/") else { throw DevelopmentProviderError.notThisProvider(request.url) }
            var fields = HTTPFields()
            for (name, value) in request.headers {
                if let name = HTTPField.Name(name) { fields.append(HTTPField(name: name, value: value)) }
            }
            let head = HTTPRequest(
                method: HTTPRequest.Method(request.method.rawValue) ?? .get, scheme: nil, authority: nil,
                path: Paths.developmentIdentityProvider + request.url.dropFirst(issuer.count), headerFields: fields)
            let response = try await respond(to: Request(head: head, body: RequestBody(buffer: request.body ?? ByteBuffer())))
            let collected = CollectedBody()
            try await response.body.write(collected)
            return (HTTPResponseStatus(statusCode: response.status.code), collected.data.value)
        }
    }

    /// The answer of the server-side endpoint `request` names.
    private func respond(to request: Request) async throws -> Response {
        let endpoint = String(request.uri.path.dropFirst(Paths.developmentIdentityProvider.count))
        switch (request.method, endpoint) {
        case (.get, "/.well-known/openid-configuration"): return try JSONResponse.make(discoveryDocument)
        case (.get, "/jwks"): return try JSONResponse.make(["keys": [publicJWK]])
        case (.post, "/token"): return try await token(request)
        case (.get, "/userinfo"): return try await userinfo(request)
        default: return Response(status: .notFound)
        }
    }
}

/// A response's body, kept (the in-process exchange's answer).
private struct CollectedBody: ResponseBodyWriter {
    final class Bytes: @unchecked Sendable {
        var value = Data()
    }

    let data = Bytes()

    mutating func write(_ buffer: ByteBuffer) async throws { data.value.append(contentsOf: buffer.readableBytesView) }
    consuming func finish(_ trailingHeaders: HTTPFields?) async throws {}
}
