import Foundation
import JWTKit

@testable import Gatehouse

/// A logout token's claims as a provider makes them; every claim can be left out or spoilt.
struct LogoutClaims: JWTPayload {
    var iss: String? = TestProvider.issuer
    var aud: String? = TestProvider.clientID
    var sub: String? = "member-1"
    var sid: String? = "sid-1"
    var iat: Double? = Date().timeIntervalSince1970
    var exp: Double? = Date().addingTimeInterval(120).timeIntervalSince1970
    var jti: String? = UUID().uuidString
    /// The events claim as JSON (nil leaves it out).
    var events: [String: EventValue]? = [IDTokenVerifier.backChannelLogoutEvent: .object]
    var nonce: String? = nil

    enum EventValue: Codable {
        case object, string
        init(from decoder: any Decoder) throws {
            self = (try? decoder.container(keyedBy: AnyCodingKey.self)) != nil ? .object : .string
        }
        func encode(to encoder: any Encoder) throws {
            switch self {
            case .object: _ = encoder.container(keyedBy: AnyCodingKey.self)
            case .string: var container = encoder.singleValueContainer(); try container.encode("logout")
            }
        }
    }

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}
