import AsyncHTTPClient
import Foundation
import Testing

@testable import Gatehouse

/// A provider that takes connections but does not answer costs two timeouts, then nothing for a while: calls fail at
/// once, one call tries again after the pause, and any answer closes the breaker. Refusals never open it.
@Suite struct ProviderBreakerTests {
    struct Refused: Error {}

    @Test func twoTimeoutsInARowStopTheWaitingUntilTheProviderAnswersAgain() async throws {
        let breaker = ProviderBreaker(threshold: 2, pause: .milliseconds(300))
        let calls = Counter()
        let timeout: @Sendable () async throws -> Int = {
            _ = await calls.increment()
            throw HTTPClientError.readTimeout
        }
        await #expect(throws: HTTPClientError.readTimeout) { try await breaker.guarding("token", timeout) }
        #expect(!breaker.isOpen)
        await #expect(throws: HTTPClientError.readTimeout) { try await breaker.guarding("token", timeout) }
        #expect(breaker.isOpen)
        // Open: failing at once, the provider not even asked.
        for _ in 0..<5 {
            await #expect(throws: OIDCError.self) { try await breaker.guarding("token", timeout) }
        }
        #expect(await calls.value == 2)
        // After the pause one call tries; another timeout opens it again at once.
        try await Task.sleep(for: .milliseconds(350))
        await #expect(throws: HTTPClientError.readTimeout) { try await breaker.guarding("token", timeout) }
        #expect(await calls.value == 3 && breaker.isOpen)
        // The provider back: the next try after the pause answers and closes the breaker.
        try await Task.sleep(for: .milliseconds(350))
        #expect(try await breaker.guarding("token") { 7 } == 7)
        #expect(!breaker.isOpen)
        #expect(try await breaker.guarding("token") { 8 } == 8)
    }

    @Test func refusalsAndAnswersBetweenTimeoutsKeepItClosed() async throws {
        let breaker = ProviderBreaker(threshold: 2, pause: .seconds(30))
        for _ in 0..<5 {
            await #expect(throws: Refused.self) { try await breaker.guarding("jwks") { () async throws -> Int in throw Refused() } }
        }
        #expect(!breaker.isOpen)
        await #expect(throws: HTTPClientError.deadlineExceeded) {
            try await breaker.guarding("jwks") { () async throws -> Int in throw HTTPClientError.deadlineExceeded }
        }
        #expect(try await breaker.guarding("jwks") { 1 } == 1)
        await #expect(throws: HTTPClientError.deadlineExceeded) {
            try await breaker.guarding("jwks") { () async throws -> Int in throw HTTPClientError.deadlineExceeded }
        }
        #expect(!breaker.isOpen)  // not two in a row
    }
}
