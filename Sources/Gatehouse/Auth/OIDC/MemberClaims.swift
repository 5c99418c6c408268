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

    /// The member as the provider says now: userinfo, with what the ID token and the access token add. Keycloak's
    /// default mappers put realm and client roles in the access token, not in userinfo, and groups may be mapped to
    /// any of the three: roles and groups are taken from all of them; names, email and phone from userinfo, else from
    /// the ID token. A token naming another subject adds nothing.
    public static func identity(userinfo: MemberIdentity, idToken: [String: Any]?, accessToken: [String: Any]?, clientID: String) -> MemberIdentity {
        var identity = userinfo
        for claims in [idToken, accessToken].compactMap({ $0 }) {
            guard (claims["sub"] as? String).map({ $0 == userinfo.sub }) ?? true else { continue }
            var withSubject = claims
            withSubject["sub"] = userinfo.sub
            guard let other = try? self.identity(from: withSubject, clientID: clientID) else { continue }
            identity.roles += other.roles.filter { !identity.roles.contains($0) }
            identity.groups += other.groups.filter { !identity.groups.contains($0) }
            identity.name = identity.name ?? other.name
            identity.email = identity.email ?? other.email
            identity.phoneNumber = identity.phoneNumber ?? other.phoneNumber
            identity.preferredUsername = identity.preferredUsername ?? other.preferredUsername
        }
        return identity
    }

    /// The claims of a JWT, read without checking its signature: for a token that came straight from the provider's
    /// token endpoint (an access token), or one already verified (an ID token). `nil` for anything else (an opaque
    /// access token).
    public static func unverifiedClaims(of token: String) -> [String: Any]? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let payload = Base64URL.decode(String(parts[1])) else { return nil }
        return (try? JSONSerialization.jsonObject(with: payload)) as? [String: Any]
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
