/// The demo members of development mode, in Keycloak's claim shape.
public struct DevelopmentAccount: Sendable, Equatable {
    public var sub: String
    public var username: String
    public var name: String
    public var email: String
    public var phoneNumber: String?
    public var realmRoles: [String]
    public var clientRoles: [String]
    public var groups: [String]

    /// Userinfo claims for the granted scopes; `phone_number` only with `phone`, roles only with `roles`.
    func claims(scopes: Set<String>, clientID: String) -> [String: Any] {
        var claims: [String: Any] = ["sub": sub]
        if scopes.contains("profile") {
            claims["name"] = name
            claims["preferred_username"] = username
            claims["given_name"] = String(name.split(separator: " ").first ?? "")
            claims["family_name"] = String(name.split(separator: " ").last ?? "")
        }
        if scopes.contains("email") {
            claims["email"] = email
            claims["email_verified"] = true
        }
        if scopes.contains("phone"), let phoneNumber {
            claims["phone_number"] = phoneNumber
            claims["phone_number_verified"] = true
        }
        if scopes.contains("roles") {
            claims["realm_access"] = ["roles": realmRoles]
            claims["resource_access"] = [clientID: ["roles": clientRoles]]
        }
        if scopes.contains("groups") { claims["groups"] = groups }
        return claims
    }
}

public enum DevelopmentAccounts {
    public static let clientID = "gatehouse-dev"

    public static let all: [DevelopmentAccount] = [
        DevelopmentAccount(
            sub: "3f6c2a8e-5b1d-4c7a-9e2f-0a1b2c3d4e01", username: "alice", name: "Alice Archer", email: "alice@example.org",
            phoneNumber: "+15550100001", realmRoles: ["user", "offline_access"], clientRoles: ["user"], groups: ["/staff"]
        ),
        DevelopmentAccount(
            sub: "3f6c2a8e-5b1d-4c7a-9e2f-0a1b2c3d4e02", username: "bob", name: "Bob Baker", email: "bob@example.org",
            phoneNumber: nil, realmRoles: ["user"], clientRoles: [], groups: ["/volunteers"]
        ),
        DevelopmentAccount(
            sub: "3f6c2a8e-5b1d-4c7a-9e2f-0a1b2c3d4e03", username: "olive", name: "Olive Operator", email: "olive@example.org",
            phoneNumber: "+15550100003", realmRoles: ["user", "gatehouse-operator"], clientRoles: ["user"], groups: ["/staff", "/operators"]
        ),
    ]

    public static func account(username: String) -> DevelopmentAccount? {
        all.first { $0.username == username }
    }
}
