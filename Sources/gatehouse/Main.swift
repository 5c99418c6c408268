import ArgumentParser
import Foundation
import Gatehouse
import Hummingbird
import Logging

@main
struct GatehouseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gatehouse",
        abstract: "A web gateway: SSO sign-in, proxied web apps, chat features by auth level.",
        version: "gatehouse \(BuildInfo.version) (commit \(BuildStamp.commit), built \(BuildStamp.built))",
        subcommands: [Serve.self, CheckConfig.self, Development.self, Funnel.self, StorageCommand.self, Probe.self],
        defaultSubcommand: Development.self
    )
}

/// Loads and validates configuration, printing every problem and exiting non-zero when there are any.
func loadConfiguration(path: String?, development: Bool) -> GatehouseConfiguration {
    do {
        return try ConfigurationSource.file(path, development: development).load()
    } catch {
        FileHandle.standardError.write(Data("\(error)\n".utf8))
        Foundation.exit(2)
    }
}

/// Serves `configuration`, read again from the same file and environment on `SIGHUP` and when the file changes.
func serveGateway(_ configuration: GatehouseConfiguration, file: String?, development: Bool) async throws {
    // The log's last lines (the shutdown's) are written before the process ends, however it ends here.
    defer { LogOutput.standard.flush() }
    BuildInfo.record(commit: BuildStamp.commit, built: BuildStamp.built)
    LogLevelSetting.gateway.level = Logger.Level(rawValue: configuration.logLevel) ?? .info
    LoggingSystem.bootstrap { label in
        switch configuration.logFormat {
        case .json: FollowingLevel(JSONLogHandler(label: label, level: .trace))
        case .text: FollowingLevel(StreamLogHandler.standardOutput(label: label))
        }
    }
    let logger = Logger(label: "gatehouse")
    // What the gateway runs with, never a secret. What a reload cannot change takes a restart, which the graceful
    // shutdown makes seamless behind a balancer.
    logger.notice(
        "configuration loaded",
        metadata: [
            "file": .string(file ?? "(none)"), "public_url": .string(configuration.publicOrigin),
            "storage": .string(configuration.storage.kind.rawValue), "apps": .stringConvertible(configuration.apps.count),
            "development": .stringConvertible(configuration.developmentMode), "version": .string(BuildInfo.version),
            "commit": .string(BuildStamp.commit), "built": .string(BuildStamp.built),
        ])
    for warning in configuration.warnings { logger.warning("\(warning)") }
    let built = try await GatehouseApplication.build(
        configuration: configuration, source: .file(file, development: development), logger: logger)
    if let password = built.developmentPassword {
        // Written straight to the file descriptor: a redirected stdout would hold `print`'s text in its buffer,
        // and scripts read the password from it.
        LogOutput.standard.flush()
        FileHandle.standardOutput.write(Data((DevelopmentBanner.text(configuration: configuration, password: password) + "\n").utf8))
    }
    try await built.run()
}

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run the gateway with a configuration file and GATEHOUSE_* environment variables.")

    @Option(name: .long, help: "Path of the JSON configuration file.")
    var config: String?

    func run() async throws {
        try await serveGateway(loadConfiguration(path: config, development: false), file: config, development: false)
    }
}

struct Development: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dev",
        abstract: "Run development mode on http://127.0.0.1:8080: SQLite, the built-in identity provider, demo members."
    )

    @Option(name: .long, help: "Optional JSON configuration file layered over the development defaults.")
    var config: String?

    @Flag(name: .long, help: "Serve https://localhost:8443 with a certificate of a development authority kept in ./data/tls.")
    var tls = false

    func run() async throws {
        if tls {
            let files = try DevelopmentCertificates.prepare(in: DirectoriesConfiguration().data + "/tls")
            // Only what the environment does not set already: `--tls` with another port or host still works.
            setenv("GATEHOUSE_PUBLIC_URL", "https://localhost:8443", 0)
            setenv("GATEHOUSE_LISTEN_TLS_CERTIFICATE_FILE", files.certificate, 0)
            setenv("GATEHOUSE_LISTEN_TLS_PRIVATE_KEY_FILE", files.privateKey, 0)
            print(
                """
                HTTPS with a development certificate authority: \(files.authority)
                  Trust it once in your browser (Chromium: Settings > Privacy and security > Security > Manage certificates >
                  Authorities > Import; Firefox: Settings > Privacy & Security > Certificates > View Certificates > Authorities
                  > Import), or for curl: curl --cacert \(files.authority) https://localhost:8443/healthz
                """)
        }
        try await serveGateway(loadConfiguration(path: config, development: true), file: config, development: true)
    }
}

struct Probe: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Ask a running gateway's /healthz (a container's HEALTHCHECK): exit 0 when it answers 200, else 1.")

    @Option(name: .long, help: "The address to ask; by default /healthz on loopback at GATEHOUSE_LISTEN_PORT (else 8080).")
    var url = HealthProbe.defaultURL()

    func run() async throws {
        if let problem = await HealthProbe.problem(url: url) {
            FileHandle.standardError.write(Data("\(problem)\n".utf8))
            throw ExitCode(1)
        }
    }
}

struct CheckConfig: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "check-config", abstract: "Validate a configuration and print every problem.")

    @Option(name: .long, help: "Path of the JSON configuration file.")
    var config: String

    func run() async throws {
        do {
            let configuration = try ConfigurationSource.file(config, development: false).load()
            // The homeserver is asked as the gateway would ask it: a configuration it cannot use is not OK.
            let chatProblems = await configuration.registration.chat.problems()
            if !chatProblems.isEmpty {
                print("configuration problems:")
                for problem in chatProblems { print("  \(problem)") }
                throw ExitCode(2)
            }
            print("configuration OK: \(configuration.publicOrigin), issuer \(configuration.providers.map(\.issuer).joined(separator: ", ")), \(configuration.apps.count) app(s)")
            if configuration.registration.chat.backend == .synapse, let url = configuration.registration.chat.homeserverURL {
                print("chat homeserver: \(url.absoluteString) answers with an admin token, provider \(configuration.registration.chat.authProvider)")
            }
            for warning in configuration.warnings { print("warning: \(warning)") }
        } catch let exit as ExitCode {
            throw exit
        } catch {
            print(error)
            throw ExitCode(2)
        }
    }
}

/// The store a command works on without serving: the gateway's configuration, or development mode's.
struct StoreOptions: ParsableArguments {
    @Option(name: .long, help: "Path of the JSON configuration file (the same the gateway runs with).")
    var config: String?

    @Flag(name: .long, help: "Use the development-mode store (./data) when no configuration file is given.")
    var development = false

    var configuration: GatehouseConfiguration { loadConfiguration(path: config, development: development || config == nil) }

    /// Warnings and worse only: a command's output is its answer.
    var logger: Logger {
        var logger = Logger(label: "gatehouse")
        logger.logLevel = .warning
        return logger
    }
}

struct Funnel: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the upgrade funnel (sign-in to registration) for a time window, from the gateway's store.")

    @OptionGroup var store: StoreOptions

    @Option(name: .long, help: "The last N days (default 7).")
    var days: String?

    @Option(name: .long, help: "Start of the window, ISO 8601 (2026-11-01 or 2026-11-01T08:00:00Z).")
    var since: String?

    @Option(name: .long, help: "End of the window, ISO 8601 (default now).")
    var until: String?

    @Flag(name: .long, help: "Print JSON, as the operator endpoint does.")
    var json = false

    func run() async throws {
        let configuration = store.configuration
        let window: DateInterval
        switch FunnelWindow.parse(days: days, since: since, until: until) {
        case .success(let parsed): window = parsed
        case .failure(let error):
            FileHandle.standardError.write(Data("gatehouse funnel: \(error)\n".utf8))
            throw ExitCode(2)
        }
        let report = try await GatehouseApplication.funnelReport(configuration: configuration, window: window, logger: store.logger)
        if json {
            let data = try JSONSerialization.data(withJSONObject: report.json(), options: [.sortedKeys, .prettyPrinted])
            print(String(decoding: data, as: UTF8.self))
        } else {
            print(report.text())
        }
    }
}

/// Runs a storage command's work; a refusal or a store's error is printed alone and exits 2.
func storeCommand<T>(_ body: () async throws -> T) async throws -> T {
    do {
        return try await body()
    } catch {
        FileHandle.standardError.write(Data("gatehouse storage: \(error)\n".utf8))
        throw ExitCode(2)
    }
}

struct StorageCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "storage", abstract: "Work on the gateway's store.", subcommands: [Reseal.self, Backup.self, Restore.self])

    struct Backup: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: """
                Copy the SQLite store to FILE consistently (a gateway may be serving from it) and print what the copy holds. \
                The secrets in it stay sealed: keep the key file's own backup apart from it.
                """)

        @OptionGroup var store: StoreOptions

        @Option(name: .long, help: "The backup file to make; it must not exist.")
        var to: String

        func run() async throws {
            let held = try await storeCommand { try await GatehouseApplication.backupStore(configuration: store.configuration, to: to, logger: store.logger) }
            print("backup written to \(to)\n\(held)")
            if held.unreadable > 0 { print("warning: \(held.unreadable) value(s) do not open with the keys at hand: a restore needs the key(s) not at hand") }
        }
    }

    struct Restore: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: """
                Put a backup made by `gatehouse storage backup` where the configuration's SQLite store goes (no store may be there yet), \
                after checking that the backup is whole and that the keys at hand open it.
                """)

        @OptionGroup var store: StoreOptions

        @Option(name: .long, help: "The backup file to restore.")
        var from: String

        func run() async throws {
            let held = try await storeCommand { try await GatehouseApplication.restoreStore(configuration: store.configuration, from: from, logger: store.logger) }
            print("restored from \(from)\n\(held)")
        }
    }

    struct Reseal: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: """
                Seal every secret the store keeps with the first key of storage.encryption_key_file, and print what changed. \
                Run it after putting a new key first (the old one after it); then the old key can be dropped.
                """)

        @OptionGroup var store: StoreOptions

        func run() async throws {
            let report = try await GatehouseApplication.resealStore(configuration: store.configuration, logger: store.logger)
            print("storage resealed: \(report)")
            if report.unreadable > 0 { throw ExitCode(1) }
        }
    }
}
