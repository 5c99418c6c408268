import Foundation
import JWTKit

/// The provider's signature keys by `kid`, refetched when a token names a key it does not know or fails against
/// the keys held (a provider that rotated its key, with or without `kid`s).
///
/// Only keys meant for signatures are kept (Keycloak lists an encryption key too), and a token is only ever checked
/// against the key its own `kid` names, or, without a `kid`, against each signature key in turn: jwt-kit would
/// otherwise fall back to its first key, whatever its use.
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

    /// The keys a token may have been signed with: the one its `kid` names (refetching once, rate-limited, when it is
    /// unknown), or every signature key when the token names none.
    public func keys(for kid: String?) async throws(OIDCError) -> [JWK] {
        if keys.isEmpty || (kid != nil && keys[kid!] == nil) {
            _ = try await refreshIfAllowed()
        }
        guard let kid else {
            guard !keys.isEmpty else { throw .invalidIDToken("the provider lists no signature keys") }
            return keys.keys.sorted().compactMap { keys[$0] }
        }
        guard let key = keys[kid] else { throw .invalidIDToken("unknown key id \(kid)") }
        return [key]
    }

    /// After a signature failed against the keys held: refetches the set, unless it was fetched a moment ago (so
    /// forged tokens cannot turn the gateway into a JWKS hammer). Whether it fetched.
    public func refreshIfAllowed() async throws(OIDCError) -> Bool {
        if let lastFetch, Date().timeIntervalSince(lastFetch) < minimumRefetchInterval { return false }
        try await refresh()
        return true
    }

    private func refresh() async throws(OIDCError) {
        let data = try await OIDCError.fetching("JWKS", fetch)
        lastFetch = Date()
        keys = try Self.signatureKeys(from: data)
    }

    /// Parses a JWKS document, keeping RSA and EC keys whose `use` is `sig` or absent, by `kid` (or position).
    public static func signatureKeys(from data: Data) throws(OIDCError) -> [String: JWK] {
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any], let list = object["keys"] as? [[String: Any]]
        else { throw .invalidProviderResponse("JWKS is not a key set") }
        var result: [String: JWK] = [:]
        for (index, entry) in list.enumerated() {
            // A provider that names no `kid`s still has keys; they are tried in turn for tokens without one.
            let kid = entry["kid"] as? String ?? "#\(index)"
            var entry = entry
            entry["kid"] = kid
            guard (entry["use"] as? String ?? "sig") == "sig",
                let kty = entry["kty"] as? String, kty == "RSA" || kty == "EC",
                let json = try? JSONSerialization.data(withJSONObject: entry),
                let jwk = try? JSONDecoder().decode(JWK.self, from: json)
            else { continue }
            result[kid] = jwk
        }
        return result
    }
}
