import Foundation
import GatehouseCore
import GatehouseStorage

extension GatehouseConfiguration {
    static let logLevels = ["trace", "debug", "info", "notice", "warning", "error", "critical"]

    /// What is allowed but weakens a defence: path-mounted apps that are not equally trusted. Path mounts share the
    /// gateway's origin, so a script of one (an XSS flaw in it) reaches every other's pages with the member's cookies:
    /// apps that not every member may open, or that ask for more, belong on app hosts (`mount: host`).
    /// Development mode's demo apps are all one process of the gateway's own: nothing to warn a newcomer of.
    public var warnings: [String] {
        guard demoAppsPort == nil else { return [] }
        let pathMounted = apps.filter { $0.mount == .path }
        let trust = Dictionary(grouping: pathMounted) { app in
            [app.minimumLevel.rawValue, app.requiredRoles.sorted().joined(separator: ","), app.requiredGroups.sorted().joined(separator: ",")]
        }
        guard trust.count > 1 else { return [] }
        let groups = trust.values.map { apps in apps.map(\.slug).sorted().joined(separator: ", ") }.sorted()
        return [
            "apps on path mounts are not equally trusted (\(groups.map { "[\($0)]" }.joined(separator: " / ")) differ in minimum_level, "
                + "required_roles or required_groups): path mounts share the gateway's origin, so one app's scripts can reach another's "
                + "pages with the member's cookies; mount the apps that need more trust on app hosts (\"mount\": \"host\", docs/security.md)"
        ]
    }

    /// The gateway's own services with TLS settings of their own, by key path (each gets a client of its own).
    var serviceTLS: [(keyPath: String, tls: AppTLSConfiguration)] {
        [
            ("oidc.tls", oidc.tls), ("registration.code_sender.tls", registration.codeSenderEndpoint?.tls),
            ("registration.provisioning.tls", registration.provisioning.endpoint?.tls), ("chat.tls", registration.chat.tls),
        ].compactMap { keyPath, tls in tls.map { (keyPath, $0) } }
            + otherProviders.enumerated().compactMap { offset, provider in provider.tls.map { ("oidc[\(offset + 1)].tls", $0) } }
    }

    /// Every problem with the values themselves, each with its key path.
    public func validate() -> [ConfigurationProblem] {
        var problems: [ConfigurationProblem] = []
        func check(_ condition: Bool, _ keyPath: String, _ message: @autoclosure () -> String) {
            if !condition { problems.append(ConfigurationProblem(keyPath, message())) }
        }

        let scheme = publicURL.scheme?.lowercased()
        check(scheme == "https" || scheme == "http", "public_url", "must be an http or https URL")
        check(publicURL.host?.isEmpty == false, "public_url", "must name a host")
        check(publicURL.path.isEmpty || publicURL.path == "/", "public_url", "must not have a path (Gatehouse serves from the root of its origin)")
        check(publicURL.query == nil && publicURL.fragment == nil, "public_url", "must not have a query or fragment")
        check(scheme != "http" || Self.isLoopback(publicURL.host), "public_url", "must be https unless the host is loopback")
        check(!listen.host.isEmpty, "listen.host", "must not be empty")
        // The listener's certificate and key: readable, a pair, in date (all of it, with the key path of each).
        if let tls = listen.tls, case .failure(let error) = TLSIdentity.load(tls) { problems += error.problems }
        // TLS towards the gateway's own services: each file readable, each authority a certificate.
        check(
            FeatureTab(rawValue: registration.registeredLanding) != nil || apps.contains { $0.slug == registration.registeredLanding },
            "registration.registered_landing",
            "must be a section (\(FeatureTab.allCases.map(\.rawValue).joined(separator: ", "))) or an app's slug, got \"\(registration.registeredLanding)\"")
        for (keyPath, tls) in serviceTLS {
            if case .failure(let error) = UpstreamTLS.load(tls, keyPath: keyPath) { problems += error.problems }
        }
        if let path = assertions.signingKeyFile,
            case .failure(let error) = Result(catching: { () throws(ConfigurationError) in
                try AssertionKeyRing.readKey(path)
            })
        {
            problems += error.problems
        }
        if let redirect = listen.redirectHTTPPort {
            check(listen.tls != nil, "listen.redirect_http_port", "needs listen.tls: it sends plain HTTP to the https listener")
            check(redirect != listen.port, "listen.redirect_http_port", "must differ from listen.port (\(listen.port))")
            check(redirect != metrics?.port, "listen.redirect_http_port", "must differ from metrics.port")
            check(isHTTPS, "listen.redirect_http_port", "needs an https public_url to send members to")
        }
        check(
            registration.codeSender != .log || developmentMode, "registration.code_sender.kind",
            "log is for development mode only (its codes are read from the development inbox); use http")
        if let metrics {
            check(metrics.port != listen.port, "metrics.port", "must differ from listen.port (\(listen.port)): metrics have a listener of their own")
            check(metrics.port != demoAppsPort, "metrics.port", "must differ from development.demo_apps_port")
        }

        problems += validateProviders()

        check(Self.isCookieName(cookie.name), "cookie.name", "must be a cookie token (letters, digits, - and _)")
        if cookie.name.hasPrefix("__Secure-") || cookie.name.hasPrefix("__Host-") {
            check(cookieIsSecure, "cookie.name", "a __Secure- or __Host- cookie needs cookie.secure (an https public_url)")
        }
        // The session cookie must reach the gateway and every external app's host (whose ingress hands it to
        // `/auth/verify`): the gateway's own host, or a parent domain of all of them.
        let gatewayHost = publicURL.host?.lowercased() ?? ""
        if let domain = cookie.domain {
            check(
                Self.isWithin(gatewayHost, domain: domain) && domain.contains(".") && !domain.hasPrefix("."), "cookie.domain",
                "must be a parent domain of the public URL's host \(gatewayHost) (like example.org)")
        }
        for (index, app) in apps.enumerated() where app.mount == .external {
            let host = app.upstream.host?.lowercased() ?? ""
            check(
                host == gatewayHost || cookie.domain.map { Self.isWithin(host, domain: $0) } == true, "apps[\(index)].upstream",
                "an external app's host must be the gateway's or under cookie.domain, or the session cookie never reaches it")
        }
        check(
            session.absoluteTimeoutSeconds >= session.idleTimeoutSeconds, "session.absolute_timeout_seconds",
            "must not be shorter than session.idle_timeout_seconds")
        check(
            session.warningSeconds < session.idleTimeoutSeconds, "session.warning_seconds",
            "must be shorter than session.idle_timeout_seconds (a warning before the session begins is no warning)")

        switch storage.kind {
        case .sqlite:
            check(!storage.sqlitePath.isEmpty, "storage.sqlite_path", "must not be empty")
        case .postgres:
            if let url = storage.postgresURL {
                check(
                    (try? PostgresDatabase.configuration(url: url)) != nil, "storage.postgres_url",
                    "must look like postgres://user:password@host:5432/database (sslmode: disable, prefer, require)")
            } else {
                check(false, "storage.postgres_url", "is required with storage.kind = postgres (GATEHOUSE_STORAGE_POSTGRES_URL or its _FILE)")
            }
        }

        check(Self.logLevels.contains(logLevel), "log_level", "must be one of \(Self.logLevels.joined(separator: ", "))")
        for (index, entry) in allowlist.enumerated() {
            check(Allowlist.isValidEntry(entry), "allowlist[\(index)]", "is not a host or *.domain wildcard: \"\(entry)\"")
        }
        problems += validateApps()
        if let appsDomain {
            let host = UpstreamHost(appsDomain)
            check(host?.kind == .name && appsDomain.contains("."), "apps_domain", "must be a host name such as apps.example.org")
            check(appsDomain.lowercased() != publicURL.host?.lowercased(), "apps_domain", "must differ from the public URL's host")
        }
        for (index, app) in apps.enumerated() where app.mount == .host && appsDomain == nil {
            check(false, "apps[\(index)].mount", "host mounts need apps_domain")
        }

        for (keyPath, slug) in [("features.chats", features.chats), ("features.calls", features.calls), ("features.stories", features.stories)] {
            guard let slug else { continue }
            let app = apps.first { $0.slug == slug }
            check(app != nil, keyPath, "names no configured app: \"\(slug)\"")
            check(app == nil || app?.minimumLevel == .registered, keyPath, "app \"\(slug)\" must have minimum_level registered")
        }
        check(!operatorRole.isEmpty, "operator.role", "must not be empty")

        if developmentMode {
            check(
                Self.isLoopback(publicURL.host), "development.enabled",
                "development mode (and its built-in identity provider) only runs on a loopback public_url")
        }
        return problems
    }

    /// Each identity provider's issuer, client and scopes; with several, each named apart (id and button) at an
    /// issuer of its own, all answering at the one callback.
    private func validateProviders() -> [ConfigurationProblem] {
        var problems: [ConfigurationProblem] = []
        func check(_ condition: Bool, _ keyPath: String, _ message: @autoclosure () -> String) {
            if !condition { problems.append(ConfigurationProblem(keyPath, message())) }
        }
        var ids: Set<String> = []
        var issuers: Set<String> = []
        for (index, provider) in providers.enumerated() {
            let path = index == 0 ? "oidc" : "oidc[\(index)]"
            if let issuer = URL(string: provider.issuer), let host = issuer.host, !host.isEmpty {
                let issuerScheme = issuer.scheme?.lowercased()
                check(
                    issuerScheme == "https" || (issuerScheme == "http" && Self.isLoopback(host)), "\(path).issuer",
                    "must be https (http only for a loopback host)")
            } else {
                check(false, "\(path).issuer", provider.issuer.isEmpty ? "is required" : "is not an absolute URL: \(provider.issuer)")
            }
            check(!provider.clientID.isEmpty, "\(path).client_id", "is required")
            check(provider.scopes.contains("openid"), "\(path).scopes", "must include openid")
            check(
                provider.redirectPath.hasPrefix("/") && ReturnTarget.isAcceptable(provider.redirectPath), "\(path).redirect_path",
                "must be a path starting with /")
            guard providers.count > 1 else { continue }
            check(
                (1...40).contains(provider.id.count) && provider.id.allSatisfy { ($0.isLowercase && $0.isASCII) || $0.isNumber || $0 == "-" },
                "\(path).id", "must be 1–40 characters of a–z, 0–9 and -")
            check(ids.insert(provider.id).inserted, "\(path).id", "\"\(provider.id)\" names two providers")
            check(provider.name?.isEmpty == false, "\(path).name", "is required with several providers: it is what the sign-in button says")
            check(issuers.insert(provider.issuer).inserted, "\(path).issuer", "is another provider's too")
            check(provider.redirectPath == oidc.redirectPath, "\(path).redirect_path", "must be the first provider's: one callback serves them all")
        }
        return problems
    }

    private func validateApps() -> [ConfigurationProblem] {
        var problems: [ConfigurationProblem] = []
        let allowlist = Allowlist(self.allowlist)
        var seen: Set<String> = []
        for (index, app) in apps.enumerated() {
            let path = "apps[\(index)]"
            let slugIsValid =
                (1...40).contains(app.slug.count)
                && app.slug.allSatisfy { ($0.isLowercase && $0.isASCII) || $0.isNumber || $0 == "-" }
            if !slugIsValid { problems.append(.init("\(path).slug", "must be 1–40 characters of a–z, 0–9 and -")) }
            if !seen.insert(app.slug).inserted { problems.append(.init("\(path).slug", "\"\(app.slug)\" is used twice")) }
            if app.name.isEmpty { problems.append(.init("\(path).name", "is required")) }
            if let seconds = app.sessionLimits.maxAgeSeconds, seconds >= session.absoluteTimeoutSeconds {
                problems.append(.init("\(path).session.max_age_seconds", "must be shorter than session.absolute_timeout_seconds (\(session.absoluteTimeoutSeconds))"))
            }
            if let seconds = app.sessionLimits.idleSeconds, seconds >= session.idleTimeoutSeconds {
                problems.append(.init("\(path).session.idle_seconds", "must be shorter than session.idle_timeout_seconds (\(session.idleTimeoutSeconds))"))
            }
            let scheme = app.upstream.scheme?.lowercased()
            let host = app.upstream.host ?? ""
            if scheme != "https" && !(scheme == "http" && Self.isLoopback(host) && proxy.allowHTTPLoopback) {
                problems.append(.init("\(path).upstream", "must be https (http only for a loopback host with proxy.allow_http_loopback)"))
            }
            if !host.isEmpty && !allowlist.isAllowed(host: host) {
                problems.append(.init("\(path).upstream", "host \(host) is outside the allowlist"))
            }
            for name in app.clientCookies {
                // A pattern (`CSRF-Token-*`) is judged by its literal start: it must not reach the gateway's own.
                let literal = NamePatterns.literalPrefix(name)
                let gatewayCookies = [cookie.name, HostMountCookies.grant, HostMountCookies.state, "__Host-"]
                if !Self.isCookieName(name.replacingOccurrences(of: "*", with: "")) {
                    problems.append(.init("\(path).client_cookies", "\(name) is not a cookie name (or a pattern with *)"))
                } else if name.hasPrefix(cookie.name) || gatewayCookies.contains(where: { literal.hasPrefix($0) || (literal != name && $0.hasPrefix(literal)) }) {
                    // A copy on the app's path would shadow the gateway's own cookie there; `__Host-` ones must be on `/`.
                    problems.append(
                        .init("\(path).client_cookies", "\(name) cannot be copied: the gateway's own cookies and __Host- cookies stay where they are")
                    )
                }
            }
            if let tls = app.tls {
                if scheme != "https" { problems.append(.init("\(path).tls", "is for an https upstream")) }
                if case .failure(let error) = UpstreamTLS.load(tls, keyPath: "\(path).tls") { problems += error.problems }
            }
        }
        return problems
    }

    /// `host` is `domain` or a subdomain of it.
    static func isWithin(_ host: String, domain: String) -> Bool {
        host == domain || host.hasSuffix("." + domain)
    }

    static func isLoopback(_ host: String?) -> Bool {
        guard let host = host?.lowercased() else { return false }
        return host == "localhost" || host == "[::1]" || host == "::1" || host.hasPrefix("127.")
    }

    static func isCookieName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 64
            && name.allSatisfy { ($0.isLetter || $0.isNumber) && $0.isASCII || $0 == "-" || $0 == "_" }
    }
}
