import Foundation
import GatehouseCore
import Testing

@testable import Gatehouse

/// The configuration read again while the gateway serves: what changes applies to new requests, what was under way
/// finishes as it began, a broken configuration changes nothing, and what only a restart can change is said so.
@Suite(.serialized) struct ReloadTests {
    static func app(_ slug: String, _ upstream: EchoUpstream) -> AppConfiguration {
        AppConfiguration(slug: slug, name: slug.capitalized, upstream: URL(string: upstream.origin + "/")!)
    }

    @Test func aReadConfigurationAppliesItsAppsAndKeepsWhatTakesARestart() throws {
        let started = try LiveGateway.developmentConfiguration(port: 8080)
        #expect(ReloadedConfiguration(started: started, read: started).keptUntilRestart.isEmpty)

        var read = started
        read.apps = [AppConfiguration(slug: "wiki", name: "Wiki", upstream: URL(string: "https://wiki.example.org/")!)]
        read.allowlist = ["wiki.example.org"]
        read.brand.gatewayName = "Portal"
        read.proxy.compressPages = !started.proxy.compressPages
        read.logLevel = "debug"
        read.listen.port = 9090
        read.storage.sqlitePath = "/elsewhere.sqlite"
        read.session.idleTimeoutSeconds += 60
        read.proxy.readTimeoutSeconds += 5
        let reload = ReloadedConfiguration(started: started, read: read)
        #expect(reload.keptUntilRestart.sorted() == ["listen", "proxy.read_timeout_seconds", "session", "storage"])
        #expect(reload.applied.apps.map(\.slug) == ["wiki"] && reload.applied.allowlist == ["wiki.example.org"])
        #expect(reload.applied.brand.gatewayName == "Portal" && reload.applied.logLevel == "debug")
        #expect(reload.applied.proxy.compressPages == read.proxy.compressPages)
        #expect(reload.applied.listen.port == 8080 && reload.applied.storage.sqlitePath == started.storage.sqlitePath)
        #expect(reload.applied.proxy.readTimeoutSeconds == started.proxy.readTimeoutSeconds)
        #expect(ReloadedConfiguration.key("maximumConnectionsPerHost") == "max_connections_per_host")
        #expect(ReloadedConfiguration.key("publicURL") == "public_url")
    }

    /// Keep-alive requests to one app all the while; an app added and one removed in the middle, with a request of
    /// the removed one under way: every request is answered, the one under way by its app.
    @Test func anAppAddedAndOneRemovedUnderLoadLosesNothing() async throws {
        try await EchoUpstream.run { upstream in
            try await LiveGateway.run(configure: { $0.apps = [Self.app("echo", upstream), Self.app("old", upstream)] }) { gateway in
                let cookies = try await ProxyTests.signedIn(gateway)
                let underWay = Task { try await gateway.get("/apps/old/delay?ms=1500", cookies: cookies) }
                let load = Task {
                    var statuses: [Int] = []
                    for index in 0..<150 {
                        statuses.append(try await gateway.get("/apps/echo/echo/\(index)", cookies: cookies).status)
                    }
                    return statuses
                }
                try await Task.sleep(for: .milliseconds(300))
                var read = gateway.configuration
                read.apps = [Self.app("echo", upstream), Self.app("new", upstream)]
                #expect(await gateway.built.reloads.apply(read) == .applied(keptUntilRestart: []))

                #expect(try await gateway.get("/apps/new/echo/added", cookies: cookies).status == 200)
                #expect(try await gateway.get("/apps/old/echo/gone", cookies: cookies).status == 404)
                let finished = try await underWay.value
                #expect(finished.status == 200 && finished.body == "delayed")
                let statuses = try await load.value
                #expect(statuses.count == 150 && statuses.allSatisfy { $0 == 200 }, "\(Set(statuses))")
                #expect(MetricsTests.samples(gateway.built.metrics.exposition())[#"gatehouse_config_reloads_total{result="applied"}"#] == 1)
            }
        }
    }

    /// A file with problems, read on `SIGHUP` or after an edit: every problem with its key path, and the gateway
    /// serving as before.
    @Test func aBrokenFileKeepsTheRunningConfiguration() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("reload-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("gatehouse.json").path
        try await EchoUpstream.run { upstream in
            try await LiveGateway.run(configure: { $0.apps = [Self.app("echo", upstream)] }) { gateway in
                let source = ConfigurationSource(file: file) { () throws(ConfigurationError) in
                    try ConfigurationLoader(environment: [:], developmentDefaults: .standard).load(path: file, development: true)
                }
                let reloads = ConfigurationApplier(running: gateway.built.running, source: source, logLevel: LogLevelSetting(.info))
                try #"{"apps": [{"slug": "echo", "name": "Echo", "upstream": "not a URL"}], "allowlist": ["*"], "log_level": "loud"}"#
                    .write(toFile: file, atomically: true, encoding: .utf8)
                guard case .refused(let problems) = await reloads.reload() else { Issue.record("a broken file was applied"); return }
                #expect(Set(problems.map(\.keyPath)).isSuperset(of: ["apps[0].upstream", "log_level"]), "\(problems)")

                try "{ not json".write(toFile: file, atomically: true, encoding: .utf8)
                guard case .refused(let unreadable) = await reloads.reload() else { Issue.record("unreadable JSON was applied"); return }
                #expect(unreadable.map(\.keyPath) == ["(file)"])

                let cookies = try await ProxyTests.signedIn(gateway)
                #expect(try await gateway.get("/apps/echo/echo/still", cookies: cookies).status == 200)
                #expect(MetricsTests.samples(gateway.built.metrics.exposition())[#"gatehouse_config_reloads_total{result="refused"}"#] == 2)
            }
        }
    }
}
