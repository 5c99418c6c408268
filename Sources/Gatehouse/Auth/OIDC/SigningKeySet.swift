import Foundation
import JWTKit

/// The provider's signature keys by `kid`, refetched when a token names a key it does not know.
///
/// Only keys meant for signatures are kept (Keycloak lists an encryption key too), and a token is only ever checked
/// against the key its own `kid` names: jwt-kit would otherwise fall back to its first key.
public actor SigningKeySet {
    public typealias Fetch = @Sendable () async throws -> Data

    private let fetch: Fetch
    private var keys: [String: JWK] = [:]
    private var lastFetch: Date?
    /// At most one refetch this often, so tokens with random `kid`s cannot turn the gateway into a JWKS hammer.
    private let minimumRefetchInterval: TimeInterval

    public init(minimumRefetchInterval: TimeInterval = 10, fetch: @escaping Fetch) {
        self.fetch = fetch
        self.minimumRefetchInterval = minimumRefetchInterval
    }

    /// The key for `kid` (or the only key when the token names none), refetching once if it is unknown.
    public func key(for kid: String?) async throws(OIDCError) -> JWK {
        if let key = lookup(kid) { return key }
        if let lastFetch, Date().timeIntervalSince(lastFetch) < minimumRefetchInterval, !keys.isEmpty {
            throw .invalidIDToken("unknown key id \(kid ?? "(none)")")
        }
        try await refresh()
        guard let key = lookup(kid) else { throw .invalidIDToken("unknown key id \(kid ?? "(none)")") }
        return key
    }

    private func lookup(_ kid: String?) -> JWK? {
        if let kid { return keys[kid] }
        return keys.count == 1 ? keys.values.first : nil
    }

    private func refresh() async throws(OIDCError) {
        let data = try await OIDCError.fetching("JWKS", fetch)
        lastFetch = Date()
        keys = try Self.signatureKeys(from: data)
    }

    /// Parses a JWKS document, keeping RSA and EC keys with a `kid` whose `use` is `sig` or absent.
    public static func signatureKeys(from data: Data) throws(OIDCError) -> [String: JWK] {
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any], let list = object["keys"] as? [[String: Any]]
        else { throw .invalidProviderResponse("JWKS is not a key set") }
        var result: [String: JWK] = [:]
        for entry in list {
            guard let kid = entry["kid"] as? String, (entry["use"] as? String ?? "sig") == "sig",
                let kty = entry["kty"] as? String, kty == "RSA" || kty == "EC",
                let json = try? JSONSerialization.data(withJSONObject: entry),
                let jwk = try? JSONDecoder().decode(JWK.self, from: json)
            else { continue }
            result[kid] = jwk
        }
        return result
    }
}
