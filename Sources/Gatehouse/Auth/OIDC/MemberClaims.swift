import Foundation
import GatehouseCore

/// Reads Keycloak-shaped userinfo (product §3) into a `MemberIdentity`.
public enum MemberClaims {
    /// Roles are realm roles plus this client's roles; groups as given. Only `sub` is required.
    public static func identity(fromUserinfo data: Data, clientID: String) throws(OIDCError) -> MemberIdentity {
        guard let object = try? JSONSerialization.jsonObject(with: data), let claims = object as? [String: Any] else {
            throw .invalidUserinfo("userinfo is not a JSON object")
        }
        return try identity(from: claims, clientID: clientID)
    }

    public static func identity(from claims: [String: Any], clientID: String) throws(OIDCError) -> MemberIdentity {
        guard let sub = claims["sub"] as? String, !sub.isEmpty else { throw .invalidUserinfo("userinfo has no sub") }
        var roles: [String] = []
        if let realm = claims["realm_access"] as? [String: Any] { roles += strings(realm["roles"]) }
        if let resources = claims["resource_access"] as? [String: Any], let client = resources[clientID] as? [String: Any] {
            roles += strings(client["roles"])
        }
        var seen: Set<String> = []
        roles = roles.filter { seen.insert($0).inserted }
        let name =
            text(claims["name"])
            ?? [text(claims["given_name"]), text(claims["family_name"])].compactMap { $0 }.joined(separator: " ").nilIfEmpty
        return MemberIdentity(
            sub: sub,
            name: name,
            email: text(claims["email"]),
            phoneNumber: text(claims["phone_number"]),
            preferredUsername: text(claims["preferred_username"]),
            roles: roles,
            groups: strings(claims["groups"])
        )
    }

    private static func text(_ value: Any?) -> String? {
        guard let string = value as? String else { return nil }
        let trimmed = string.trimmingCharacters(in: .whitespacesAndNewlines)
        return trimmed.isEmpty ? nil : trimmed
    }

    private static func strings(_ value: Any?) -> [String] {
        (value as? [Any])?.compactMap { $0 as? String } ?? []
    }
}

extension String {
    var nilIfEmpty: String? { isEmpty ? nil : self }
}
