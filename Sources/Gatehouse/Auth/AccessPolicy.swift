import GatehouseCore

/// Who may open an app: level first, then every required role and at least one required group.
public enum AccessPolicy {
    public static func mayOpen(_ app: AppConfiguration, level: AuthLevel, roles: [String], groups: [String]) -> Bool {
        level >= app.minimumLevel
            && PathRules.Requirement.meets(requiredRoles: app.requiredRoles, requiredGroups: app.requiredGroups, roles: roles, groups: groups)
    }

    /// What the member lacks of the app's roles and groups, for the refusal to name: the first required role they do
    /// not have, else the groups of which they are in none; `nil` when they lack neither.
    public static func missing(_ app: AppConfiguration, roles: [String], groups: [String]) -> PathRules.Lack? {
        if let role = app.requiredRoles.first(where: { !roles.contains($0) }) { return .role(role) }
        if !app.requiredGroups.isEmpty, !app.requiredGroups.contains(where: { PathRules.Requirement.isMember(groups, of: $0) }) {
            return .group(app.requiredGroups)
        }
        return nil
    }

    /// Whether the upgrade is offered to the member (`registration.enabled`, then every one of
    /// `registration.required_roles` and at least one of `required_groups`, as an app's requirements read). Members
    /// it is not offered to see no banner and no prompt, and the flow's pages send them back.
    public static func mayUpgrade(_ identity: MemberIdentity, registration: RegistrationConfiguration) -> Bool {
        registration.enabled
            && PathRules.Requirement.meets(
                requiredRoles: registration.requiredRoles, requiredGroups: registration.requiredGroups, roles: identity.roles, groups: identity.groups)
    }

    /// Apps the member sees in the portal: those they may open, and those that only wait for registration.
    public static func visibleApps(_ apps: [AppConfiguration], for identity: MemberIdentity, level: AuthLevel) -> [AppConfiguration] {
        apps.filter { mayOpen($0, level: max(level, $0.minimumLevel), roles: identity.roles, groups: identity.groups) }
    }
}
