/// What development mode prints on start: where to go and who to be.
public enum DevelopmentBanner {
    public static func text(configuration: GatehouseConfiguration, password: String) -> String {
        var lines = [
            "",
            "Gatehouse development mode (never for production)",
            "  Open:      \(configuration.publicOrigin)/",
            "  Demo members (password for all of them this run: \(password)):",
        ]
        for account in DevelopmentAccounts.all {
            let phone = account.phoneNumber.map { "phone \($0)" } ?? "no phone number"
            lines.append(
                "    \(account.username.padding(toLength: 6, withPad: " ", startingAt: 0)) \(account.name), roles \(account.realmRoles.joined(separator: ", ")), \(phone)"
            )
        }
        lines.append("")
        return lines.joined(separator: "\n")
    }
}
