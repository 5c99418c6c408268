import Foundation
import GatehouseCore

/// Reads the `apps` list, which only the configuration file can hold.
enum AppCatalogReader {
    static func read(_ reader: inout ConfigurationReader) -> [AppConfiguration] {
        guard let raw = reader.fileValue("apps") else { return [] }
        guard let list = raw as? [Any] else {
            reader.report("apps", "must be a list of app objects")
            return []
        }
        let known: Set = [
            "slug", "name", "description", "icon", "upstream", "minimum_level", "required_roles", "required_groups", "mount", "pass_authorization",
            "pass_headers", "identity_headers", "gateway_bar", "tls", "assertion", "assertion_header", "pass_access_token", "rules",
            "case_insensitive_paths", "content_security_policy", "client_cookies", "request_headers", "rewrite", "strip_prefix",
            "permissions", "session",
        ]
        return list.enumerated().compactMap { index, element -> AppConfiguration? in
            let path = "apps[\(index)]"
            guard let app = element as? [String: Any] else {
                reader.report(path, "must be an object")
                return nil
            }
            for key in app.keys.sorted() where !known.contains(key) {
                reader.report("\(path).\(key)", "unknown key")
            }
            func text(_ key: String) -> String? {
                guard let value = app[key] else { return nil }
                if let string = value as? String { return string }
                reader.report("\(path).\(key)", "must be a string")
                return nil
            }
            func list(_ key: String) -> [String] {
                guard let value = app[key] else { return [] }
                if let strings = value as? [String] { return strings }
                reader.report("\(path).\(key)", "must be a list of strings")
                return []
            }
            let slug = text("slug") ?? ""
            let name = text("name") ?? ""
            let upstreamText = text("upstream") ?? ""
            let levelText = text("minimum_level") ?? AuthLevel.sso.rawValue
            let mountText = text("mount") ?? AppConfiguration.Mount.path.rawValue
            let level = AuthLevel(rawValue: levelText)
            if level == nil || level == AuthLevel.none {
                reader.report("\(path).minimum_level", "must be sso or registered, got \"\(levelText)\"")
            }
            let mount = AppConfiguration.Mount(rawValue: mountText)
            if mount == nil { reader.report("\(path).mount", "must be path, host or external, got \"\(mountText)\"") }
            var upstream = URL(string: upstreamText)
            if upstream == nil || upstream?.host == nil {
                reader.report("\(path).upstream", "must be an absolute URL, got \"\(upstreamText)\"")
            }
            let description = text("description")?.trimmingCharacters(in: .whitespacesAndNewlines)
            if let description, description.count > AppConfiguration.descriptionLimit || description.contains(where: \.isNewline) {
                reader.report("\(path).description", "must be one line of at most \(AppConfiguration.descriptionLimit) characters")
            }
            let stripPrefix = flag(app, "strip_prefix", path: path, reader: &reader) ?? true
            if !stripPrefix, mount == .path, let base = upstream, !slug.isEmpty {
                // The app is served under the gateway's own path: its upstream path gets the mount's prefix.
                upstream = base.appending(path: String(Paths.app(slug).dropFirst()) + "/", directoryHint: .isDirectory)
            }
            let permissions = list("permissions")
            for feature in permissions where !PermissionsPolicy.features.contains(feature) {
                reader.report("\(path).permissions", "must name features of \(PermissionsPolicy.features.joined(separator: ", ")), got \"\(feature)\"")
            }
            let passHeaders = list("pass_headers")
            let appHeaders = headers(app, path: path, passHeaders: passHeaders, reader: &reader)
            return AppConfiguration(
                slug: slug, name: name, description: description.flatMap { $0.isEmpty ? nil : $0 }, icon: text("icon"),
                upstream: upstream ?? URL(string: "https://invalid.invalid")!,
                minimumLevel: level ?? .sso, requiredRoles: list("required_roles"), requiredGroups: list("required_groups"),
                mount: mount ?? .path, gatewayBar: barPlacement(app, path: path, reader: &reader), headers: appHeaders,
                tls: tls(app, path: path, reader: &reader), rules: PathRulesReader.read(app, path: path, reader: &reader),
                contentSecurityPolicy: policyMode(app, path: path, reader: &reader), clientCookies: clientCookies(app, path: path, reader: &reader),
                rewrite: choice(app, "rewrite", path: path, reader: &reader) ?? .full, stripPrefix: stripPrefix, permissions: permissions,
                sessionLimits: sessionLimits(app, path: path, reader: &reader)
            )
        }
    }

    /// `apps[].session`: `max_age_seconds` and `idle_seconds` (that they are shorter than the gateway's own is checked
    /// with the rest of the configuration).
    static func sessionLimits(_ app: [String: Any], path: String, reader: inout ConfigurationReader) -> AppSessionLimits {
        guard let value = app["session"] else { return .init() }
        guard let object = value as? [String: Any] else {
            reader.report("\(path).session", "must be an object of max_age_seconds and idle_seconds")
            return .init()
        }
        for key in object.keys.sorted() where !["max_age_seconds", "idle_seconds"].contains(key) {
            reader.report("\(path).session.\(key)", "unknown key")
        }
        return AppSessionLimits(
            maxAgeSeconds: PathRulesReader.seconds(object["max_age_seconds"], path: "\(path).session.max_age_seconds", reader: &reader),
            idleSeconds: PathRulesReader.seconds(object["idle_seconds"], path: "\(path).session.idle_seconds", reader: &reader))
    }

    /// `apps[].tls`: `ca_file`, `certificate_file` and `private_key_file`, each a path; the certificate and key together.
    static func tls(_ app: [String: Any], path: String, reader: inout ConfigurationReader) -> AppTLSConfiguration? {
        guard let value = app["tls"] else { return nil }
        guard let object = value as? [String: Any], object.values.allSatisfy({ $0 is String }) else {
            reader.report("\(path).tls", "must be an object of file paths: ca_file, certificate_file, private_key_file")
            return nil
        }
        for key in object.keys.sorted() where !["ca_file", "certificate_file", "private_key_file"].contains(key) {
            reader.report("\(path).tls.\(key)", "unknown key")
        }
        let tls = AppTLSConfiguration(
            caFile: object["ca_file"] as? String, certificateFile: object["certificate_file"] as? String,
            privateKeyFile: object["private_key_file"] as? String)
        if (tls.certificateFile == nil) != (tls.privateKeyFile == nil) {
            reader.report("\(path).tls", "certificate_file and private_key_file go together (a client certificate and its key)")
        }
        return tls
    }

    /// `gateway_bar`: `auto`, `top`, `bottom` or `handle`; `true` and `false` (earlier releases) are `auto` and `handle`.
    static func barPlacement(_ app: [String: Any], path: String, reader: inout ConfigurationReader) -> AppConfiguration.BarPlacement {
        if let value = app["gateway_bar"], ConfigurationReader.isBoolean(value), let flag = value as? Bool { return flag ? .automatic : .handle }
        return choice(app, "gateway_bar", path: path, reader: &reader) ?? .automatic
    }

    /// One of an enumeration's names under `key`, `nil` when absent or reported as something else.
    static func choice<Choice: RawRepresentable & CaseIterable>(
        _ app: [String: Any], _ key: String, path: String, reader: inout ConfigurationReader
    ) -> Choice? where Choice.RawValue == String {
        guard let value = app[key] else { return nil }
        if let text = value as? String, let choice = Choice(rawValue: text) { return choice }
        reader.report("\(path).\(key)", "must be one of \(Choice.allCases.map(\.rawValue).joined(separator: ", ")), got \(value)")
        return nil
    }

    /// `content_security_policy`: `merge`, `app`, or a policy of the operator's.
    static func policyMode(_ app: [String: Any], path: String, reader: inout ConfigurationReader) -> AppConfiguration.PolicyMode {
        guard let value = app["content_security_policy"] else { return .merge }
        switch value as? String {
        case "merge": return .merge
        case "app": return .app
        case let text? where !GatehouseCore.ContentSecurityPolicy(parsing: text).directives.isEmpty && !text.contains(","):
            return .custom(text)
        default:
            reader.report("\(path).content_security_policy", "must be merge, app, or one policy (directives separated by ;)")
            return .merge
        }
    }

    /// `client_cookies`: names or patterns (`CSRF-Token-*`), or `"csrf"` for the common frameworks' CSRF cookies, which
    /// is also what an app without the setting gets (`[]` for none). The names themselves are checked with the rest of
    /// the configuration, which knows the gateway's own cookies.
    static func clientCookies(_ app: [String: Any], path: String, reader: inout ConfigurationReader) -> [String] {
        guard let value = app["client_cookies"] else { return AppConfiguration.csrfCookieNames }
        if value as? String == "csrf" { return AppConfiguration.csrfCookieNames }
        guard let names = value as? [String] else {
            reader.report("\(path).client_cookies", "must be \"csrf\" or a list of cookie names")
            return []
        }
        return names.flatMap { $0 == "csrf" ? AppConfiguration.csrfCookieNames : [$0] }
    }

    /// One app's `true`/`false` setting under `key`, `nil` when it is absent or reported as something else.
    static func flag(_ app: [String: Any], _ key: String, path: String, reader: inout ConfigurationReader) -> Bool? {
        guard let value = app[key] else { return nil }
        if ConfigurationReader.isBoolean(value), let flag = value as? Bool { return flag }
        reader.report("\(path).\(key)", "must be true or false")
        return nil
    }

    /// `pass_authorization`, `pass_headers` and `identity_headers` of one app, each problem reported with its path.
    static func headers(
        _ app: [String: Any], path: String, passHeaders: [String], reader: inout ConfigurationReader
    ) -> AppHeaderConfiguration {
        var headers = AppHeaderConfiguration()
        if let flag = flag(app, "pass_authorization", path: path, reader: &reader) { headers.passAuthorization = flag }
        if let value = app["identity_headers"] {
            if let map = value as? [String: String] {
                var identity: [String: AppHeaderConfiguration.Claim] = [:]
                for (name, claimText) in map.sorted(by: { $0.key < $1.key }) {
                    guard let claim = AppHeaderConfiguration.Claim(rawValue: claimText) else {
                        let claims = AppHeaderConfiguration.Claim.allCases.map(\.rawValue).joined(separator: ", ")
                        reader.report("\(path).identity_headers.\(name)", "must be one of \(claims), got \"\(claimText)\"")
                        continue
                    }
                    if let problem = HeaderHygiene.problem(setting: name) {
                        reader.report("\(path).identity_headers.\(name)", problem)
                        continue
                    }
                    identity[name] = claim
                }
                headers.identity = identity
            } else {
                reader.report("\(path).identity_headers", "must be an object of header name to claim")
            }
        }
        if flag(app, "assertion", path: path, reader: &reader) == false {
            headers.assertion = nil
        } else if let name = app["assertion_header"] {
            if let name = name as? String, HeaderHygiene.problem(setting: name) == nil,
                !headers.identity.keys.contains(where: { HeaderHygiene.canonical($0) == HeaderHygiene.canonical(name) })
            {
                headers.assertion = name
            } else {
                reader.report("\(path).assertion_header", "must be a header name of the app's own, not one the gateway or the browser sets")
            }
        }
        if let flag = flag(app, "pass_access_token", path: path, reader: &reader) { headers.passAccessToken = flag }
        switch app["request_headers"] {
        case nil: break
        case let mode as String where mode == "strict" || mode == "pass": headers.strictRequestHeaders = mode == "strict"
        default: reader.report("\(path).request_headers", "must be pass (every header but the gateway's and identity's) or strict")
        }
        if headers.passAccessToken && headers.passAuthorization {
            reader.report("\(path).pass_access_token", "cannot be set with pass_authorization: both would fill the Authorization header")
        }
        headers.passHeaders = passHeaders
        let gatewayNames = Array(headers.identity.keys) + (headers.assertion.map { [$0] } ?? [])
        for name in headers.passHeaders {
            if let problem = HeaderHygiene.problem(passing: name, identityNames: gatewayNames) {
                reader.report("\(path).pass_headers", "\(name) \(problem)")
            }
        }
        return headers
    }
}
