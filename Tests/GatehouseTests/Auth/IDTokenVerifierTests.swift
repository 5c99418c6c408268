import Crypto
import Foundation
import GatehouseCore
import JWTKit
import Testing
import _CryptoExtras

@testable import Gatehouse

@Suite struct IDTokenVerifierTests {
    func verifier(_ provider: TestProvider, source: JWKSSource? = nil, refetchInterval: TimeInterval = 0) throws -> (IDTokenVerifier, JWKSSource) {
        let source = try source ?? JWKSSource(provider.jwksData())
        let keys = SigningKeySet(minimumRefetchInterval: refetchInterval) { await source.fetch() }
        return (IDTokenVerifier(issuer: TestProvider.issuer, clientID: TestProvider.clientID, keys: keys), source)
    }

    @Test func acceptsES256AndRS256() async throws {
        let provider = try await TestProvider()
        let (verifier, _) = try verifier(provider)
        for kid in ["ec-1", "rsa-1"] {
            let claims = try await verifier.verify(try await provider.sign(provider.claims(), kid: kid), expectedNonce: "n-1")
            #expect(claims.subject == "member-1")
        }
    }

    @Test func acceptsAudienceArraysThatIncludeTheClient() async throws {
        let provider = try await TestProvider()
        let (verifier, _) = try verifier(provider)
        var claims = provider.claims(aud: ["account", TestProvider.clientID])
        claims.azp = TestProvider.clientID
        let token = try await provider.sign(claims)
        #expect(try await verifier.verify(token, expectedNonce: "n-1").audience.contains(TestProvider.clientID))
    }

    @Test func refusesAlgNone() async throws {
        let provider = try await TestProvider()
        let (verifier, _) = try verifier(provider)
        for alg in ["none", "None", "NONE"] {
            let token = try TestProvider.forge(header: ["alg": alg, "kid": "ec-1", "typ": "JWT"], claims: provider.claims())
            await #expect(throws: OIDCError.self) { try await verifier.verify(token, expectedNonce: "n-1") }
        }
    }

    /// The classic confusion: an HMAC token "signed" with the provider's public key material.
    @Test func refusesHMACEvenWithThePublicKeyAsSecret() async throws {
        let provider = try await TestProvider()
        let (verifier, _) = try verifier(provider)
        let (modulus, _) = try provider.rsaKey.publicKey.getKeyPrimitives()
        for alg in ["HS256", "HS384", "HS512"] {
            let token = try TestProvider.forge(header: ["alg": alg, "kid": "rsa-1"], claims: provider.claims()) { input in
                Data(HMAC<SHA256>.authenticationCode(for: input, using: SymmetricKey(data: modulus)))
            }
            await #expect(throws: OIDCError.self) { try await verifier.verify(token, expectedNonce: "n-1") }
        }
    }

    @Test func refusesTokensSignedByAnotherKeyUnderAKnownKid() async throws {
        let provider = try await TestProvider()
        let impostor = try await TestProvider()
        let (verifier, _) = try verifier(provider)
        let token = try await impostor.sign(impostor.claims(), kid: "ec-1")
        await #expect(throws: OIDCError.self) { try await verifier.verify(token, expectedNonce: "n-1") }
    }

    @Test func neverUsesTheEncryptionKeyOrADefaultKey() async throws {
        let provider = try await TestProvider()
        let (verifier, _) = try verifier(provider)
        let signedWithoutKid = try await provider.sign(provider.claims(), kid: "ec-1")
        // The same token with its kid swapped for the encryption key's, or removed while several keys exist.
        for header in [["alg": "ES256", "kid": "enc-1"], ["alg": "ES256"]] {
            let parts = signedWithoutKid.split(separator: ".")
            let head = Base64URL.encode(try JSONSerialization.data(withJSONObject: header))
            let token = "\(head).\(parts[1]).\(parts[2])"
            await #expect(throws: OIDCError.self) { try await verifier.verify(token, expectedNonce: "n-1") }
        }
    }

    @Test func refetchesOnceForAnUnknownKid() async throws {
        let provider = try await TestProvider()
        let source = JWKSSource(try provider.jwksData(ecKid: "old"))
        let (verifier, _) = try verifier(provider, source: source)
        // Prime the cache with the old key set.
        let oldToken = try TestProvider.forge(header: ["alg": "ES256", "kid": "rsa-1"], claims: provider.claims())
        _ = try? await verifier.verify(oldToken, expectedNonce: "n-1")
        #expect(await source.fetches == 2)  // the first fetch, and one more after the signature failed
        await source.replace(try provider.jwksData(ecKid: "ec-1"))  // the provider rotated its key
        let claims = try await verifier.verify(try await provider.sign(provider.claims(), kid: "ec-1"), expectedNonce: "n-1")
        #expect(claims.subject == "member-1")
        #expect(await source.fetches == 3)
    }

    /// The provider's key set unreachable: a token under a key already fetched still verifies; one that needs the set
    /// again fails as the provider being unreachable (the "cannot be reached" page), never as a bad token.
    @Test func anUnreachableKeySetIsTheProviderDownNotABadToken() async throws {
        let provider = try await TestProvider()
        let document = try provider.jwksData()
        let reachable = JWKSSource(document)
        let down = Counter()
        let keys = SigningKeySet(minimumRefetchInterval: 0) {
            if await down.value > 0 { throw OIDCError.providerUnreachable("jwks: connection refused") }
            return await reachable.fetch()
        }
        let verifier = IDTokenVerifier(issuer: TestProvider.issuer, clientID: TestProvider.clientID, keys: keys)
        _ = try await verifier.verify(try await provider.sign(provider.claims(), kid: "ec-1"), expectedNonce: "n-1")
        _ = await down.increment()
        #expect(try await verifier.verify(try await provider.sign(provider.claims(), kid: "ec-1"), expectedNonce: "n-1").subject == "member-1")
        let unknown = try TestProvider.forge(header: ["alg": "ES256", "kid": "rotated"], claims: provider.claims())
        await #expect(throws: OIDCError.providerUnreachable("jwks: connection refused")) { try await verifier.verify(unknown, expectedNonce: "n-1") }
    }

    @Test func unknownKidsDoNotHammerTheProvider() async throws {
        let provider = try await TestProvider()
        let (verifier, source) = try verifier(provider, refetchInterval: 3600)
        _ = try await verifier.verify(try await provider.sign(provider.claims()), expectedNonce: "n-1")
        for index in 0..<5 {
            let token = try TestProvider.forge(header: ["alg": "ES256", "kid": "random-\(index)"], claims: provider.claims())
            await #expect(throws: OIDCError.self) { try await verifier.verify(token, expectedNonce: "n-1") }
        }
        #expect(await source.fetches == 1)
    }

    @Test func checksEveryClaim() async throws {
        let provider = try await TestProvider()
        let (verifier, _) = try verifier(provider)
        let bad: [(String, TestClaims)] = [
            ("issuer", provider.claims(iss: "https://evil.example.org/realms/heritage")),
            ("audience", provider.claims(aud: ["someone-else"])),
            ("audience array", provider.claims(aud: ["account", "other"])),
            ("expired", provider.claims(exp: Date().addingTimeInterval(-120))),
            ("future iat", provider.claims(iat: Date().addingTimeInterval(600))),
            ("nonce", provider.claims(nonce: "other")),
            ("missing nonce", provider.claims(nonce: nil)),
            ("issuer with a trailing slash", provider.claims(iss: TestProvider.issuer + "/")),
            ("issuer in another case", provider.claims(iss: TestProvider.issuer.uppercased())),
            ("several audiences, no azp", provider.claims(aud: [TestProvider.clientID, "account"])),
            (
                "azp of another client",
                {
                    var c = provider.claims(); c.azp = "other-client"; return c
                }()
            ),
            (
                "several audiences, azp of another",
                {
                    var c = provider.claims(aud: [TestProvider.clientID, "x"]); c.azp = "x"; return c
                }()
            ),
            (
                "future nbf",
                {
                    var c = provider.claims(); c.nbf = Date().addingTimeInterval(600).timeIntervalSince1970; return c
                }()
            ),
        ]
        for (label, claims) in bad {
            let token = try await provider.sign(claims)
            await #expect(throws: OIDCError.self, "\(label)") { try await verifier.verify(token, expectedNonce: "n-1") }
        }
    }

    @Test(arguments: ["", "a.b", "a.b.c.d", "!!!.???.***", "eyJhbGciOiJFUzI1NiJ9.e30"])
    func refusesMalformedTokens(_ token: String) async throws {
        let provider = try await TestProvider()
        let (verifier, _) = try verifier(provider)
        await #expect(throws: OIDCError.self) { try await verifier.verify(token, expectedNonce: nil) }
    }

    @Test func aTokenWithAnUnknownCriticalHeaderIsRefused() async throws {
        let provider = try await TestProvider()
        let (verifier, _) = try verifier(provider)
        let signed = try await provider.sign(provider.claims())
        // Re-signing is not needed to show the refusal: the header is judged before any key is.
        let parts = signed.split(separator: ".")
        let header = Base64URL.encode(try JSONSerialization.data(withJSONObject: ["alg": "ES256", "kid": "ec-1", "crit": ["exp-ext"], "exp-ext": 1]))
        await #expect(throws: OIDCError.self) { try await verifier.verify("\(header).\(parts[1]).\(parts[2])", expectedNonce: "n-1") }
    }

    @Test func aNotBeforeInThePastIsFine() async throws {
        let provider = try await TestProvider()
        let (verifier, _) = try verifier(provider)
        var claims = provider.claims()
        claims.nbf = Date().addingTimeInterval(-30).timeIntervalSince1970
        #expect(try await verifier.verify(try await provider.sign(claims), expectedNonce: "n-1").subject == "member-1")
    }

    /// A provider whose keys and tokens carry no `kid` rotates its key: the next sign-in refetches and works.
    @Test func keysWithoutKidSurviveARotation() async throws {
        let provider = try await TestProvider()
        func keySet(_ key: ES256PrivateKey) throws -> Data {
            let ec = key.publicKey.parameters!
            return try JSONSerialization.data(withJSONObject: ["keys": [["kty": "EC", "crv": "P-256", "x": ec.x, "y": ec.y]]])
        }
        func sign(with key: ES256PrivateKey) async throws -> String {
            let signer = JWTKeyCollection()
            await signer.add(ecdsa: key)
            return try await signer.sign(provider.claims())
        }
        let old = ES256PrivateKey()
        let new = ES256PrivateKey()
        let source = JWKSSource(try keySet(old))
        let (verifier, _) = try verifier(provider, source: source, refetchInterval: 0)
        #expect(try await verifier.verify(try await sign(with: old), expectedNonce: "n-1").subject == "member-1")
        #expect(await source.fetches == 1)
        await source.replace(try keySet(new))
        #expect(try await verifier.verify(try await sign(with: new), expectedNonce: "n-1").subject == "member-1")
        #expect(await source.fetches == 2)
        // A token signed by neither key still fails, after at most one more fetch.
        await #expect(throws: OIDCError.self) { try await verifier.verify(try await sign(with: ES256PrivateKey()), expectedNonce: "n-1") }
        #expect(await source.fetches == 3)
    }

    @Test func signatureFailuresRefetchAtMostOncePerInterval() async throws {
        let provider = try await TestProvider()
        let (verifier, source) = try verifier(provider, refetchInterval: 3600)
        let stranger = try await TestProvider()
        for _ in 0..<5 {
            let token = try await stranger.sign(stranger.claims(), kid: "ec-1")
            await #expect(throws: OIDCError.self) { try await verifier.verify(token, expectedNonce: "n-1") }
        }
        #expect(await source.fetches == 1)
    }
}
