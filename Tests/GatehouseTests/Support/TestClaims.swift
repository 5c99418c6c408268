import Foundation
import JWTKit

struct TestClaims: JWTPayload {
    enum Audience: Codable {
        case single(String)
        case many([String])
        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .single(let value): try container.encode(value)
            case .many(let values): try container.encode(values)
            }
        }
        init(from decoder: any Decoder) throws { self = .single(try decoder.singleValueContainer().decode(String.self)) }
    }
    var iss: String
    var sub: String
    var aud: Audience
    var exp: Double
    var iat: Double
    var nonce: String?
    var azp: String? = nil
    var nbf: Double? = nil
    var auth_time: Double? = nil
    var acr: String? = nil
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}
