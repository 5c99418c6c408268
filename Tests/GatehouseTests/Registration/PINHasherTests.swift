import Testing

@testable import Gatehouse

@Suite struct PINHasherTests {
    @Test func aPINIsStoredOnlyAsBcrypt() async throws {
        let hasher = PINHasher(cost: 10)
        let hash = try await hasher.hash("2580")
        #expect(hash.hasPrefix("$2b$10$") && !hash.contains("2580"))
        #expect(try await hasher.verify("2580", hash: hash))
        #expect(try await !hasher.verify("2581", hash: hash))
    }
}
