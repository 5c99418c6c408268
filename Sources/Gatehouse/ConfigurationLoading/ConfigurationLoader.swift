import Foundation
import GatehouseCore
import GatehouseStorage

/// Builds a `GatehouseConfiguration` from a JSON file and `GATEHOUSE_…` environment variables, reporting every
/// problem with its key path in one pass.
public struct ConfigurationLoader {
    public var environment: [String: String]
    public var readFile: @Sendable (String) throws -> String
    /// What development mode fills in where the file is silent (the composition root's `.standard`).
    public var developmentDefaults: DevelopmentDefaults

    public init(
        environment: [String: String] = ProcessInfo.processInfo.environment,
        developmentDefaults: DevelopmentDefaults,
        readFile: @escaping @Sendable (String) throws -> String = { try String(contentsOfFile: $0, encoding: .utf8) }
    ) {
        self.environment = environment
        self.developmentDefaults = developmentDefaults
        self.readFile = readFile
    }

    /// Loads the file at `path` (or none), over development defaults when `development` is set.
    public func load(path: String?, development: Bool = false) throws(ConfigurationError) -> GatehouseConfiguration {
        var file: [String: Any] = [:]
        var early: [ConfigurationProblem] = []
        if let path {
            do {
                let text = try readFile(path)
                let object = try JSONSerialization.jsonObject(with: Data(text.utf8))
                if let dictionary = object as? [String: Any] {
                    file = dictionary
                } else {
                    early.append(ConfigurationProblem("(file)", "\(path) must hold a JSON object"))
                }
            } catch let error as CocoaError where error.code == .fileReadNoSuchFile || error.code == .fileNoSuchFile {
                throw ConfigurationError(problems: [ConfigurationProblem("(file)", "\(path) does not exist")])
            } catch {
                throw ConfigurationError(problems: [ConfigurationProblem("(file)", "\(path) is not valid JSON: \(error.localizedDescription)")])
            }
        }
        // Several identity providers: the first read as `oidc` is, the others each on their own.
        var otherProviders: [[String: Any]]?
        if let list = file["oidc"] as? [Any] {
            let objects = list.compactMap { $0 as? [String: Any] }
            if objects.isEmpty || objects.count != list.count {
                early.append(ConfigurationProblem("oidc", "must be an object, or a list of objects (one per identity provider)"))
            }
            file["oidc"] = objects.first ?? [:]
            otherProviders = Array(objects.dropFirst())
        }
        var reader = ConfigurationReader(file: file, environment: environment, readSecretFile: readFile)
        var configuration = read(&reader, development: development)
        var problems = early + reader.problems
        problems += reader.unknownFileKeys().map { ConfigurationProblem($0, "unknown key") }
        if let otherProviders {
            let others = readOtherProviders(otherProviders)
            configuration.otherProviders = others.providers
            problems += others.problems
        }
        problems += configuration.validate()
        if otherProviders != nil { problems = Self.listed(problems, index: 0) }
        problems += Self.missingFolders(configuration.directories)
        guard problems.isEmpty else { throw ConfigurationError(problems: problems) }
        return configuration
    }

    /// One identity provider, from `oidc` (the first of a list is read there too); `developmentIssuer` and `clientID`
    /// stand in for what development mode's built-in provider needs and the file does not say.
    static func readProvider(_ reader: inout ConfigurationReader, developmentIssuer: String?, clientID: String) -> OIDCConfiguration {
        let defaults = OIDCConfiguration(issuer: "", clientID: "")
        var provider = OIDCConfiguration(
            issuer: reader.optionalString("oidc.issuer") ?? developmentIssuer ?? "",
            clientID: reader.optionalString("oidc.client_id") ?? (developmentIssuer != nil ? clientID : ""),
            clientSecret: reader.secret("oidc.client_secret"),
            scopes: reader.stringList("oidc.scopes", default: defaults.scopes),
            redirectPath: reader.string("oidc.redirect_path", default: defaults.redirectPath),
            clockSkewSeconds: reader.int("oidc.clock_skew_seconds", default: defaults.clockSkewSeconds, range: 0...600),
            timeoutSeconds: reader.int("oidc.timeout_seconds", default: defaults.timeoutSeconds, range: 1...120),
            pauseAfterTimeoutsSeconds: reader.int("oidc.pause_after_timeouts_seconds", default: defaults.pauseAfterTimeoutsSeconds, range: 1...3600),
            refreshSeconds: reader.int("oidc.refresh_seconds", default: defaults.refreshSeconds, range: 5...86400),
            tls: Self.readServiceTLS(&reader, "oidc")
        )
        provider.id = reader.string("oidc.id", default: defaults.id).lowercased()
        provider.name = reader.optionalString("oidc.name")
        return provider
    }

    /// `oidc` as a list: the first provider is read as `oidc` is, each of the others by a reader of its own over its
    /// object and its `GATEHOUSE_OIDC_<ID>_…` variables (`GATEHOUSE_OIDC_PARTNER_CLIENT_SECRET`); every problem named
    /// by its place in the list (`oidc[1].issuer`).
    func readOtherProviders(_ list: [[String: Any]]) -> (providers: [OIDCConfiguration], problems: [ConfigurationProblem]) {
        var providers: [OIDCConfiguration] = []
        var problems: [ConfigurationProblem] = []
        for (offset, object) in list.enumerated() {
            let variablePrefix = "GATEHOUSE_OIDC_" + ((object["id"] as? String) ?? "").uppercased().replacingOccurrences(of: "-", with: "_") + "_"
            let variables = Dictionary(
                environment.compactMap { name, value in
                    name.hasPrefix(variablePrefix) ? ("GATEHOUSE_OIDC_" + name.dropFirst(variablePrefix.count), value) : nil
                }) { first, _ in first }
            var reader = ConfigurationReader(file: ["oidc": object], environment: variables, readSecretFile: readFile)
            providers.append(Self.readProvider(&reader, developmentIssuer: nil, clientID: ""))
            problems += Self.listed(reader.problems + reader.unknownFileKeys().map { ConfigurationProblem($0, "unknown key") }, index: offset + 1)
        }
        return (providers, problems)
    }

    /// `oidc.issuer` → `oidc[index].issuer`.
    static func listed(_ problems: [ConfigurationProblem], index: Int) -> [ConfigurationProblem] {
        problems.map { problem in
            guard problem.keyPath == "oidc" || problem.keyPath.hasPrefix("oidc.") else { return problem }
            return ConfigurationProblem("oidc[\(index)]" + problem.keyPath.dropFirst("oidc".count), problem.message)
        }
    }

    /// Where a folder that ships with Gatehouse (`Templates`, `Public`, `Strings`) is, when the configuration does not
    /// say: in the working folder (a checkout); in `<prefix>/share/gatehouse/` for a binary installed as
    /// `<prefix>/bin/gatehouse`; or in the checkout the binary was built in (`<checkout>/.build/…/gatehouse`), so that a
    /// build runs from any folder. Otherwise the plain name, which the missing-folder check then reports.
    static func shippedFolder(_ name: String, executable: URL? = Bundle.main.executableURL) -> String {
        if isFolder(name) { return name }
        guard let executable = executable?.resolvingSymlinksInPath() else { return name }
        var folder = executable.deletingLastPathComponent()
        let installed = folder.deletingLastPathComponent().appendingPathComponent("share/gatehouse/\(name)").path
        if isFolder(installed) { return installed }
        while folder.path != "/" {
            folder.deleteLastPathComponent()
            if FileManager.default.fileExists(atPath: folder.appendingPathComponent("Package.swift").path),
                isFolder(folder.appendingPathComponent(name).path)
            {
                return folder.appendingPathComponent(name).path
            }
        }
        return name
    }

    static func isFolder(_ path: String) -> Bool {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && isDirectory.boolValue
    }

    /// Templates, public files and strings ship with Gatehouse; relative paths resolve against the working folder.
    static func missingFolders(_ directories: DirectoriesConfiguration) -> [ConfigurationProblem] {
        let folders = [
            ("directories.templates", directories.templates), ("directories.public", directories.publicFiles),
            ("directories.strings", directories.strings),
        ]
        return folders.compactMap { keyPath, folder in
            guard !isFolder(folder) else { return nil }
            return ConfigurationProblem(keyPath, "folder \(folder) does not exist (relative to \(FileManager.default.currentDirectoryPath))")
        }
    }

    private func read(_ reader: inout ConfigurationReader, development forced: Bool) -> GatehouseConfiguration {
        let development = reader.bool("development.enabled", default: forced)
        let defaults = developmentDefaults
        let listenDefaults = ListenConfiguration()
        let publicText = reader.string("public_url", default: "http://\(listenDefaults.host):\(listenDefaults.port)")
        let publicURL = URL(string: publicText) ?? URL(string: "http://invalid.invalid")!
        if URL(string: publicText) == nil { reader.report("public_url", "is not a URL: \(publicText)") }
        let origin = publicText.hasSuffix("/") ? String(publicText.dropLast()) : publicText

        let listen = ListenConfiguration(
            host: reader.string("listen.host", default: listenDefaults.host),
            port: reader.int("listen.port", default: publicURL.port ?? listenDefaults.port, range: 1...65535),
            headerTimeoutSeconds: reader.int("listen.header_timeout_seconds", default: listenDefaults.headerTimeoutSeconds, range: 1...300),
            idleTimeoutSeconds: reader.int("listen.idle_timeout_seconds", default: listenDefaults.idleTimeoutSeconds, range: 1...3600),
            bodyTimeoutSeconds: reader.int("listen.body_timeout_seconds", default: listenDefaults.bodyTimeoutSeconds, range: 1...3600),
            maximumHeaderBytes: reader.int("listen.max_header_bytes", default: listenDefaults.maximumHeaderBytes, range: 4096...(1 << 20)),
            maximumRequestTargetBytes: reader.int(
                "listen.max_request_target_bytes", default: listenDefaults.maximumRequestTargetBytes, range: 256...(1 << 20)),
            // Development mode stops at once: nobody balances over a laptop.
            drainSeconds: reader.int("listen.drain_seconds", default: development ? 0 : listenDefaults.drainSeconds, range: 0...3600),
            shutdownGraceSeconds: reader.int("listen.shutdown_grace_seconds", default: listenDefaults.shutdownGraceSeconds, range: 1...3600),
            trustedProxies: reader.stringList("listen.trusted_proxies", default: listenDefaults.trustedProxies),
            tls: Self.readListenTLS(&reader),
            redirectHTTPPort: reader.optionalInt("listen.redirect_http_port", range: 1...65535),
            maximumConnections: reader.optionalInt("listen.max_connections", range: 16...10_000_000),
            maximumConnectionsPerAddress: reader.int(
                "listen.max_connections_per_address", default: listenDefaults.maximumConnectionsPerAddress, range: 1...10_000_000),
            sendTimeoutSeconds: reader.int("listen.send_timeout_seconds", default: listenDefaults.sendTimeoutSeconds, range: 1...3600)
        )
        for entry in ClientAddressResolver.invalidEntries(listen.trustedProxies) {
            reader.report("listen.trusted_proxies", "\"\(entry)\" is not an address or a CIDR block")
        }
        let oidc = Self.readProvider(&reader, developmentIssuer: development ? origin + defaults.issuerPath : nil, clientID: defaults.clientID)
        let cookie = CookieConfiguration(
            name: reader.string("cookie.name", default: CookieConfiguration().name),
            secure: reader.optionalBool("cookie.secure"),
            domain: reader.optionalString("cookie.domain")?.lowercased()
        )
        let sessionDefaults = SessionConfiguration()
        let session = SessionConfiguration(
            idleTimeoutSeconds: reader.int("session.idle_timeout_seconds", default: sessionDefaults.idleTimeoutSeconds, range: 60...(30 * 86400)),
            absoluteTimeoutSeconds: reader.int(
                "session.absolute_timeout_seconds", default: sessionDefaults.absoluteTimeoutSeconds, range: 60...(90 * 86400)),
            refreshWindowSeconds: reader.int("session.refresh_window_seconds", default: sessionDefaults.refreshWindowSeconds, range: 0...3600),
            warningSeconds: reader.int("session.warning_seconds", default: sessionDefaults.warningSeconds, range: 0...3600),
            bindToNetwork: reader.bool("session.bind_to_network", default: sessionDefaults.bindToNetwork)
        )
        let kindText = reader.string("storage.kind", default: StorageConfiguration().kind.rawValue)
        let kind = StorageConfiguration.Kind(rawValue: kindText) ?? .sqlite
        if StorageConfiguration.Kind(rawValue: kindText) == nil {
            reader.report(
                "storage.kind", "must be one of \(StorageConfiguration.Kind.allCases.map(\.rawValue).joined(separator: ", ")), got \"\(kindText)\"")
        }
        let directoryDefaults = DirectoriesConfiguration()
        let directories = DirectoriesConfiguration(
            templates: reader.string("directories.templates", default: Self.shippedFolder(directoryDefaults.templates)),
            publicFiles: reader.string("directories.public", default: Self.shippedFolder(directoryDefaults.publicFiles)),
            strings: reader.string("directories.strings", default: Self.shippedFolder(directoryDefaults.strings)),
            data: reader.string("directories.data", default: directoryDefaults.data)
        )
        let storage = StorageConfiguration(
            kind: kind,
            sqlitePath: reader.string("storage.sqlite_path", default: StorageConfiguration.sqlitePath(in: directories.data)),
            postgresURL: reader.secret("storage.postgres_url"),
            keys: readStorageKeys(&reader, development: development, data: directories.data)
        )
        let brand = BrandReader.read(&reader)
        let configuredApps = AppCatalogReader.read(&reader)
        let proxyDefaults = ProxyConfiguration()
        let demoPort = reader.int("development.demo_apps_port", default: listen.port + 1, range: 1...65535)
        let demoAppsPort = development && reader.fileValue("apps") == nil ? demoPort : nil
        let metricsDefaults = MetricsConfiguration()
        let metrics = MetricsConfiguration(
            host: reader.string("metrics.host", default: metricsDefaults.host),
            port: reader.int("metrics.port", default: metricsDefaults.port, range: 1...65535),
            onMembersListener: reader.bool("metrics.on_members_listener", default: metricsDefaults.onMembersListener))
        return GatehouseConfiguration(
            publicURL: publicURL,
            listen: listen,
            developmentMode: development,
            demoAppsPort: demoAppsPort,
            oidc: oidc,
            cookie: cookie,
            session: session,
            storage: storage,
            apps: demoAppsPort.map(defaults.apps) ?? configuredApps,
            appsDomain: reader.optionalString("apps_domain") ?? (development ? defaults.appsDomain : nil),
            allowlist: reader.stringList("allowlist", default: development ? defaults.allowlist : []),
            proxy: ProxyConfiguration(
                connectTimeoutSeconds: reader.int("proxy.connect_timeout_seconds", default: proxyDefaults.connectTimeoutSeconds, range: 1...120),
                readTimeoutSeconds: reader.int("proxy.read_timeout_seconds", default: proxyDefaults.readTimeoutSeconds, range: 1...3600),
                maximumRequestBodyBytes: reader.int(
                    "proxy.max_request_body_bytes", default: proxyDefaults.maximumRequestBodyBytes, range: 0...(1 << 34)),
                maximumConnectionsPerHost: reader.int(
                    "proxy.max_connections_per_host", default: proxyDefaults.maximumConnectionsPerHost, range: 1...4096),
                allowHTTPLoopback: reader.bool("proxy.allow_http_loopback", default: development),
                allowPrivateAddresses: reader.bool("proxy.allow_private_addresses", default: proxyDefaults.allowPrivateAddresses),
                contentSecurityPolicy: reader.optionalString("proxy.content_security_policy"),
                maximumInflatedBytes: reader.int("proxy.max_inflated_bytes", default: proxyDefaults.maximumInflatedBytes, range: 1024...(1 << 34)),
                maximumInflationRatio: reader.int("proxy.max_inflation_ratio", default: proxyDefaults.maximumInflationRatio, range: 2...100_000),
                cookieBoundaries: reader.stringList("proxy.cookie_boundaries", default: proxyDefaults.cookieBoundaries),
                compressPages: reader.bool("proxy.compress_pages", default: proxyDefaults.compressPages),
                leaving: readLeaving(&reader)
            ),
            brand: brand,
            directories: directories,
            logLevel: reader.string("log_level", default: GatehouseConfiguration.defaultLogLevel),
            logFormat: readLogFormat(&reader, development: development),
            registration: readRegistration(&reader, development: development),
            features: readFeatures(&reader, demoApps: demoAppsPort != nil ? defaults.features : nil),
            operatorRole: reader.string("operator.role", default: GatehouseConfiguration.defaultOperatorRole),
            metrics: reader.bool("metrics.enabled", default: true) ? metrics : nil,
            rateLimits: readRateLimits(&reader),
            assertions: AssertionsConfiguration(
                signingKeyFile: reader.optionalString("assertions.signing_key_file"),
                rotationDays: reader.int("assertions.rotation_days", default: AssertionsConfiguration().rotationDays, range: 1...365)),
            tracing: readTracing(&reader),
            audit: AuditConfiguration(
                file: reader.optionalString("audit.file"),
                retentionDays: reader.int("audit.retention_days", default: AuditConfiguration().retentionDays, range: 1...3650))
        )
    }

    /// The keys that seal the store's secrets: `storage.encryption_key_file` (a file of base64 keys, the sealing key
    /// first) or `GATEHOUSE_STORAGE_ENCRYPTION_KEY`; development mode keeps its own in the data folder.
    private func readStorageKeys(_ reader: inout ConfigurationReader, development: Bool, data: String) -> StorageKeySource {
        guard let text = reader.text(ofFileNamedBy: "storage.encryption_key_file") ?? reader.secret("storage.encryption_key") else {
            if development { return .developmentFile(StorageConfiguration.developmentKeyPath(in: data)) }
            reader.report(
                "storage.encryption_key_file",
                "is required: members' tokens, cookies and phone numbers are sealed with it in the store; make a key with "
                    + "`openssl rand -base64 32 > storage.key` (owner-only) and name the file here, or set GATEHOUSE_STORAGE_ENCRYPTION_KEY")
            return .missing
        }
        do {
            return .keyring(try StorageKeyring.parse(text))
        } catch {
            reader.report("storage.encryption_key_file", "\(error)")
            return .missing
        }
    }

    /// `tracing.otlp_endpoint` (an http or https URL) and `tracing.service_name`.
    private func readTracing(_ reader: inout ConfigurationReader) -> TracingConfiguration {
        let endpoint = reader.optionalString("tracing.otlp_endpoint").flatMap { text -> URL? in
            guard let url = URL(string: text), ["http", "https"].contains(url.scheme?.lowercased() ?? ""), url.host != nil else {
                reader.report("tracing.otlp_endpoint", "must be the collector's http or https URL (http://collector:4318), got \"\(text)\"")
                return nil
            }
            return url
        }
        return TracingConfiguration(
            otlpEndpoint: endpoint, serviceName: reader.string("tracing.service_name", default: TracingConfiguration().serviceName))
    }

    /// `rate_limits.<name>.limit` requests per `rate_limits.<name>.period_seconds`.
    private func readRateLimits(_ reader: inout ConfigurationReader) -> RateLimitsConfiguration {
        let defaults = RateLimitsConfiguration()
        func rule(_ name: String, _ fallback: RateLimitRule) -> RateLimitRule {
            RateLimitRule(
                limit: reader.int("rate_limits.\(name).limit", default: fallback.limit, range: 1...1_000_000),
                periodSeconds: reader.int("rate_limits.\(name).period_seconds", default: fallback.periodSeconds, range: 1...86400))
        }
        return RateLimitsConfiguration(
            signInStarts: rule("sign_in_starts", defaults.signInStarts), callbacks: rule("callbacks", defaults.callbacks),
            usernameChecks: rule("username_checks", defaults.usernameChecks))
    }

    /// `log_format`: `json` for `serve`, `text` in development mode unless set.
    private func readLogFormat(_ reader: inout ConfigurationReader, development: Bool) -> LogFormat {
        let fallback: LogFormat = development ? .text : .json
        let text = reader.string("log_format", default: fallback.rawValue)
        guard let format = LogFormat(rawValue: text) else {
            reader.report("log_format", "must be one of \(LogFormat.allCases.map(\.rawValue).joined(separator: ", ")), got \"\(text)\"")
            return fallback
        }
        return format
    }

    /// `<prefix>.tls.ca_file`, `.certificate_file`, `.private_key_file` (as `apps[].tls`): TLS towards one of the
    /// gateway's own services (the identity provider, the code sender, the provisioning webhook). The files are
    /// checked by `validate()`.
    static func readServiceTLS(_ reader: inout ConfigurationReader, _ prefix: String) -> AppTLSConfiguration? {
        let tls = AppTLSConfiguration(
            caFile: reader.optionalString("\(prefix).tls.ca_file"), certificateFile: reader.optionalString("\(prefix).tls.certificate_file"),
            privateKeyFile: reader.optionalString("\(prefix).tls.private_key_file"))
        guard tls.caFile != nil || tls.certificateFile != nil || tls.privateKeyFile != nil else { return nil }
        if (tls.certificateFile == nil) != (tls.privateKeyFile == nil) {
            reader.report("\(prefix).tls", "certificate_file and private_key_file go together (a client certificate and its key)")
        }
        return tls
    }

    /// `listen.tls.*`: set when a certificate file is named. The key is read from its own file (its path in the file or
    /// in `GATEHOUSE_LISTEN_TLS_PRIVATE_KEY_FILE`, as a secret's): never written into the configuration.
    static func readListenTLS(_ reader: inout ConfigurationReader) -> ListenTLSConfiguration? {
        let keyFile = reader.optionalString("listen.tls.private_key_file")
        let versionText = reader.string("listen.tls.minimum_version", default: ListenTLSConfiguration.MinimumVersion.tls12.rawValue)
        guard let certificateFile = reader.optionalString("listen.tls.certificate_file") else {
            if keyFile != nil { reader.report("listen.tls.certificate_file", "is required with listen.tls.private_key_file") }
            return nil
        }
        let version = ListenTLSConfiguration.MinimumVersion(rawValue: versionText)
        if version == nil { reader.report("listen.tls.minimum_version", "must be 1.2 or 1.3, got \"\(versionText)\"") }
        if keyFile == nil { reader.report("listen.tls.private_key_file", "is required with listen.tls.certificate_file") }
        return ListenTLSConfiguration(
            certificateFile: certificateFile, privateKeyFile: keyFile ?? "", minimumVersion: version ?? .tls12,
            http2: reader.bool("listen.tls.http2", default: true))
    }

    /// `proxy.leaving`: `interstitial` or `block`.
    private func readLeaving(_ reader: inout ConfigurationReader) -> ProxyConfiguration.Leaving {
        let text = reader.string("proxy.leaving", default: ProxyConfiguration.Leaving.interstitial.rawValue)
        guard let leaving = ProxyConfiguration.Leaving(rawValue: text) else {
            reader.report(
                "proxy.leaving", "must be one of \(ProxyConfiguration.Leaving.allCases.map(\.rawValue).joined(separator: ", ")), got \"\(text)\"")
            return .interstitial
        }
        return leaving
    }
}
