import JWTKit

extension TestProvider {
    func sign(logout claims: LogoutClaims, kid: String = "ec-1", typ: String = "logout+jwt") async throws -> String {
        try await signer.sign(claims, kid: JWKIdentifier(string: kid), header: ["typ": .string(typ)])
    }
}
