import Foundation

/// What a configuration read again changes in a running gateway. The apps (with their rules and `apps_domain`), the
/// allowlist, the brand, the proxy's settings, the rate limits, the operator role and the log level apply to new
/// requests at once. Everything else (the listener, the store, the identity provider, sessions, cookies, registration,
/// the connection pools' sizes and timeouts…) is built into what the gateway started with: a change there is reported
/// (`keptUntilRestart`, by key) and the running value kept until the next start.
public struct ReloadedConfiguration: Sendable {
    /// The configuration that applies from now on: `started` with the reloadable parts of `read`.
    public let applied: GatehouseConfiguration
    /// The keys whose new values wait for a restart, e.g. `listen`, `storage`, `proxy.read_timeout_seconds`.
    public let keptUntilRestart: [String]

    public init(started: GatehouseConfiguration, read: GatehouseConfiguration) {
        var applied = started
        applied.apps = read.apps
        applied.turnedOffApps = read.turnedOffApps
        applied.appsDomain = read.appsDomain
        applied.allowlist = read.allowlist
        applied.brand = read.brand
        applied.rateLimits = read.rateLimits
        applied.operatorRole = read.operatorRole
        applied.logLevel = read.logLevel
        // The proxy's settings but those the upstream connections were made with.
        applied.proxy = read.proxy
        applied.proxy.connectTimeoutSeconds = started.proxy.connectTimeoutSeconds
        applied.proxy.readTimeoutSeconds = started.proxy.readTimeoutSeconds
        applied.proxy.maximumConnectionsPerHost = started.proxy.maximumConnectionsPerHost
        self.applied = applied
        keptUntilRestart =
            Self.differences(applied, read, prefix: "").filter { $0 != "proxy" }
            + Self.differences(applied.proxy, read.proxy, prefix: "proxy.")
    }

    /// What changed since `before` (the configuration that applied until now), for the audit trail: the apps added,
    /// removed and changed by slug, the other reloadable parts by key, and what waits for a restart.
    public func summary(since before: GatehouseConfiguration) -> String {
        let old = Dictionary(before.apps.map { ($0.slug, String(reflecting: $0)) }) { first, _ in first }
        let new = Dictionary(applied.apps.map { ($0.slug, String(reflecting: $0)) }) { first, _ in first }
        var parts: [String] = []
        func list(_ name: String, _ slugs: some Sequence<String>) {
            let sorted = slugs.sorted()
            if !sorted.isEmpty { parts.append("\(name): " + sorted.joined(separator: ", ")) }
        }
        list("apps added", new.keys.filter { old[$0] == nil })
        list("apps removed", old.keys.filter { new[$0] == nil })
        list("apps changed", new.keys.filter { old[$0] != nil && old[$0] != new[$0] })
        list("changed", Self.differences(before, applied, prefix: "").filter { $0 != "apps" })
        list("kept until restart", keptUntilRestart)
        return parts.isEmpty ? "no change" : parts.joined(separator: "; ")
    }

    /// The stored properties of `old` and `new` that differ, as configuration keys (`readTimeoutSeconds` is
    /// `read_timeout_seconds`; the file's `max_` keys are named as the file names them).
    static func differences<Value>(_ old: Value, _ new: Value, prefix: String) -> [String] {
        let before = Mirror(reflecting: old).children
        let after = Dictionary(Mirror(reflecting: new).children.compactMap { child in child.label.map { ($0, child.value) } }) { first, _ in first }
        return before.compactMap { child in
            guard let label = child.label, let other = after[label] else { return nil }
            return String(reflecting: child.value) == String(reflecting: other) ? nil : prefix + key(label)
        }
    }

    /// `maximumConnectionsPerHost` → `max_connections_per_host`, `publicURL` → `public_url`.
    static func key(_ label: String) -> String {
        var key = ""
        var previous: Character?
        for character in label {
            if character.isUppercase, let previous, previous.isLowercase { key.append("_") }
            key.append(Character(character.lowercased()))
            previous = character
        }
        return key.hasPrefix("maximum_") ? "max_" + key.dropFirst("maximum_".count) : key
    }
}
