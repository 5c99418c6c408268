import GatehouseCore
import GatehouseDataPlane
import GatehouseStorage
import Hummingbird
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1

/// Where the configuration comes from, to be read again on a reload: the file (watched for changes) and the
/// environment, as at the start.
public struct ConfigurationSource: Sendable {
    /// The file to watch, when there is one.
    public let file: String?
    private let read: @Sendable () throws(ConfigurationError) -> GatehouseConfiguration

    public init(file: String?, read: @escaping @Sendable () throws(ConfigurationError) -> GatehouseConfiguration) {
        self.file = file
        self.read = read
    }

    /// The configuration file (if any) over the `GATEHOUSE_*` environment, with development mode's defaults when
    /// `development`: what `gatehouse serve` and `gatehouse dev` read at the start and on every reload.
    public static func file(_ path: String?, development: Bool) -> ConfigurationSource {
        ConfigurationSource(file: path) { () throws(ConfigurationError) in
            try ConfigurationLoader(developmentDefaults: .standard).load(path: path, development: development)
        }
    }

    /// The configuration as it is now.
    public func load() throws(ConfigurationError) -> GatehouseConfiguration { try read() }
}

/// The gateway new requests go to, with the router made for it. A reload replaces both at once; a request, an
/// exchange of the data plane or a WebSocket keeps the one it began with to its end. Every request reads it and a
/// reload is rare: each thread reads its own copy while no reload happened (`ReadMostly`), so two event loops never
/// contend on it.
final class RunningGateway: Sendable {
    /// A class, so that a request's look-up copies one reference.
    final class Generation: Sendable {
        let gateway: Gateway
        let responder: HeadAsGetResponder

        init(_ gateway: Gateway) {
            self.gateway = gateway
            responder = HeadAsGetResponder(
                router: GatehouseApplication.buildRouter(gateway).buildResponder(), appsDomain: gateway.catalog.appsDomain)
        }
    }

    let foundation: GatewayFoundation
    private let current: ReadMostly<Generation>

    init(_ gateway: Gateway) {
        foundation = gateway.foundation
        current = ReadMostly(Generation(gateway))
        gateway.takeOver()
    }

    var generation: Generation { current.value }
    var gateway: Gateway { generation.gateway }

    /// From now on, new requests go to `next`.
    func replace(with next: Generation) {
        current.change { $0 = next }
        next.gateway.takeOver()
    }
}

/// The responder of the members' listener: the running gateway's router, for each request.
public struct CurrentResponder: HTTPResponder {
    public typealias Context = GatewayRequestContext
    let running: RunningGateway

    public func respond(to request: Request, context: Context) async throws -> Response {
        try await running.generation.responder.respond(to: request, context: context)
    }
}

/// The data plane's routes and WebSocket upgrades: the running gateway's, for each request head.
struct CurrentRoutes: DataPlaneRoutes, DataPlaneUpgrades {
    let running: RunningGateway

    func route(_ head: RequestHead, peer: SocketAddress?) -> DataPlaneRoute {
        running.gateway.dataPlane.route(head, peer: peer)
    }

    func upgrade(_ head: HTTPRequestHead, peer: SocketAddress?, eventLoop: any EventLoop) -> EventLoopFuture<DataPlaneUpgrade> {
        running.gateway.webSockets.upgrade(head, peer: peer, eventLoop: eventLoop)
    }
}

/// Reads the configuration again and puts what it changes to work (`ReloadedConfiguration`), one reload at a time (a
/// signal and a changed file at once: the second waits for the first, so the newest read is the one that stays). A
/// configuration with problems changes nothing: each problem is logged with its key path. Counted in
/// `gatehouse_config_reloads_total{result}` (`applied`, `refused`). The console's apps (`StoredCatalog`) join the
/// file's at each reload, and when they change.
actor ConfigurationApplier {
    enum Outcome: Sendable, Equatable {
        case applied(keptUntilRestart: [String])
        case refused([ConfigurationProblem])
    }

    let running: RunningGateway
    let source: ConfigurationSource?
    let logLevel: LogLevelSetting
    /// The configuration as the file and the environment last gave it, without the console's apps.
    private var read: GatehouseConfiguration
    /// The console's apps as last read from the store.
    private var stored: [StoredApp] = []
    /// The reload under way, which the next waits for.
    private var last: Task<Void, Never>?

    init(running: RunningGateway, source: ConfigurationSource?, logLevel: LogLevelSetting = .gateway) {
        self.running = running
        self.source = source
        self.logLevel = logLevel
        read = running.foundation.configuration
        running.foundation.storedCatalog.state.fileApps = read.apps
        running.foundation.storedCatalog.applyWith { [weak self] in await self?.reloadCatalog() }
    }

    /// The source read again (on `SIGHUP`, or when the file changed).
    @discardableResult
    func reload() async -> Outcome {
        guard let source else { return .applied(keptUntilRestart: []) }
        return await inTurn {
            do throws(ConfigurationError) {
                return await self.applying(try source.load())
            } catch {
                return await self.refuse(error.problems)
            }
        }
    }

    /// `read` as the configuration from now on, as far as a running gateway can take it.
    func apply(_ read: GatehouseConfiguration) async -> Outcome {
        await inTurn { await self.applying(read) }
    }

    /// The console's apps read again from the store and applied if they changed (a store that does not answer
    /// leaves the running apps as they are, and the next change or reconnection tries again).
    func reloadCatalog() async {
        await inTurn {
            do {
                // Services start beside the server's own wait for the store (a new database's migrations).
                try await self.running.foundation.stores.prepare()
                let stored = try await self.running.foundation.storedCatalog.store.apps()
                guard await stored != self.stored else { return }
                _ = await self.applying(nil, stored: stored)
            } catch {
                self.running.foundation.logger.warning("the console's apps are unreadable; the running apps stay", metadata: ["error": "\(error)"])
            }
        }
    }

    /// `work` after the reload under way, if any.
    private func inTurn<Result: Sendable>(_ work: @escaping @Sendable () async -> Result) async -> Result {
        let previous = last
        let task = Task {
            await previous?.value
            return await work()
        }
        last = Task { _ = await task.value }
        return await task.value
    }

    /// `read` (the file's configuration; `nil`: as last read) with `stored` (the console's apps; `nil`: as last
    /// read) made the running gateway.
    private func applying(_ read: GatehouseConfiguration?, stored: [StoredApp]? = nil) async -> Outcome {
        let foundation = running.foundation
        let before = running.gateway.configuration
        let fileChanged = read != nil
        if let read { self.read = read }
        if let stored { self.stored = stored }
        let (merged, setAside) = StoredAppsReader.merge(self.stored, into: self.read)
        let reload = ReloadedConfiguration(started: foundation.configuration, read: merged)
        let next: RunningGateway.Generation
        do {
            let renderer = try await PageRenderer.load(configuration: reload.applied)
            next = .init(try Gateway(configuration: reload.applied, foundation: foundation, renderer: renderer))
        } catch {
            return refuse([ConfigurationProblem("(reload)", "\(error)")])
        }
        running.replace(with: next)
        foundation.storedCatalog.state = .init(fileApps: self.read.apps, setAside: setAside)
        for (slug, problems) in setAside.sorted(by: { $0.key < $1.key }) {
            foundation.logger.error(
                "an app of the console's is not served", metadata: ["app": .string(slug), "problems": .string(problems.map(\.description).joined(separator: "; "))])
        }
        guard fileChanged else {
            foundation.logger.notice("the console's apps applied", metadata: ["apps": .stringConvertible(reload.applied.apps.count)])
            return .applied(keptUntilRestart: [])
        }
        if let level = Logger.Level(rawValue: reload.applied.logLevel) { logLevel.level = level }
        for key in reload.keptUntilRestart {
            foundation.logger.warning("configuration reload: a change takes a restart, the running value is kept", metadata: ["key": .string(key)])
        }
        foundation.metrics.counter("gatehouse_config_reloads_total", [("result", "applied")]).increment()
        foundation.audit.record(
            AuditRecord(action: .operatorChange, reason: "configuration_reloaded", detail: reload.summary(since: before)))
        foundation.logger.notice(
            "configuration reloaded",
            metadata: ["apps": .stringConvertible(reload.applied.apps.count), "kept_until_restart": .stringConvertible(reload.keptUntilRestart.count)])
        return .applied(keptUntilRestart: reload.keptUntilRestart)
    }

    private func refuse(_ problems: [ConfigurationProblem]) -> Outcome {
        let foundation = running.foundation
        for problem in problems {
            foundation.logger.error(
                "configuration reload refused, the running configuration is kept",
                metadata: ["key": .string(problem.keyPath), "problem": .string(problem.message)])
        }
        foundation.metrics.counter("gatehouse_config_reloads_total", [("result", "refused")]).increment()
        foundation.audit.record(
            AuditRecord(
                action: .operatorChange, reason: "configuration_refused", detail: problems.map(\.description).joined(separator: "; ")))
        return .refused(problems)
    }
}
