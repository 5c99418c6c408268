import Foundation

/// Provider metadata fetched on first use and kept; a failed fetch is retried on the next sign-in, so the gateway
/// starts even while the provider is down.
actor DiscoveryCache {
    private let issuer: String
    private let fetch: @Sendable () async throws -> Data
    private var cached: ProviderMetadata?

    init(issuer: String, fetch: @escaping @Sendable () async throws -> Data) {
        self.issuer = issuer
        self.fetch = fetch
    }

    func metadata() async throws(OIDCError) -> ProviderMetadata {
        if let cached { return cached }
        let data = try await OIDCError.fetching("discovery", fetch)
        let metadata: ProviderMetadata
        do {
            metadata = try JSONDecoder().decode(ProviderMetadata.self, from: data)
        } catch {
            throw .invalidProviderResponse("discovery document: \(error)")
        }
        try metadata.validate(expectedIssuer: issuer)
        cached = metadata
        return metadata
    }
}
