import Foundation
import Testing

@testable import GatehouseCore

@Suite struct PKCETests {
    /// RFC 7636 Appendix B.
    @Test func matchesTheRFCExample() {
        let pkce = PKCE(verifier: "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk")
        #expect(pkce.challenge == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM")
        #expect(PKCE.method == "S256")
    }

    @Test func generatedVerifiersAreValidAndDistinct() {
        let verifiers = (0..<50).map { _ in PKCE.generate().verifier }
        #expect(verifiers.allSatisfy(PKCE.isValidVerifier))
        #expect(Set(verifiers).count == verifiers.count)
    }

    @Test(arguments: ["short", String(repeating: "a", count: 129), String(repeating: "a", count: 42) + "+", String(repeating: "é", count: 43)])
    func rejectsInvalidVerifiers(_ verifier: String) {
        #expect(!PKCE.isValidVerifier(verifier))
    }

    @Test func base64URLRoundTrips() {
        let bytes: [UInt8] = [0xfb, 0xff, 0xbf, 0x00, 0x3e]
        let encoded = Base64URL.encode(.init(bytes))
        #expect(!encoded.contains("+") && !encoded.contains("/") && !encoded.contains("="))
        #expect(Base64URL.decode(encoded).map(Array.init) == bytes)
        #expect(Base64URL.decode("ab=c") == nil)
    }
}

/// Query strings and tokens built on the hot path without Foundation's helpers: the same results as Foundation's.
@Suite struct EncodingHelpersTests {
    @Test func percentEncodingMatchesFoundation() {
        var allowed = CharacterSet.alphanumerics.intersection(CharacterSet(charactersIn: Unicode.Scalar(0)..<Unicode.Scalar(128)))
        allowed.insert(charactersIn: "-._~")
        var generator = SeededGenerator(seed: 7)
        let alphabet = Array("aZ09-._~ !\"#$%&'()*+,/:;<=>?@[\\]^`{|}é😀\t\n")
        for _ in 0..<2_000 {
            let value = String((0..<Int.random(in: 0...12, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! })
            #expect(FormEncoding.escape(value) == value.addingPercentEncoding(withAllowedCharacters: allowed), "\(value)")
        }
    }

    @Test func base64URLMatchesFoundationsBase64() {
        var generator = SeededGenerator(seed: 11)
        for count in 0..<64 {
            let bytes = Data((0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) })
            let foundation = bytes.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
            #expect(Base64URL.encode(bytes) == foundation)
        }
    }

    @Test func randomTokensHaveTheirLengthAndDiffer() {
        let tokens = (0..<200).map { _ in RandomToken.make(bytes: 18) }
        #expect(tokens.allSatisfy { $0.count == 24 && Base64URL.decode($0)?.count == 18 })
        #expect(Set(tokens).count == tokens.count)
        #expect(RandomToken.make(bytes: 32).count == 43)
    }
}
