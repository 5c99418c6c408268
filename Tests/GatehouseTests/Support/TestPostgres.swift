import Foundation
import Logging
import NIOPosix
import PostgresNIO

@testable import Gatehouse
@testable import GatehouseStorage

/// A real PostgreSQL server for the tests: started once per test process by `scripts/postgres` in a temporary
/// directory on loopback, stopped when the process exits. Each test gets a database of its own.
enum TestPostgres {
    /// The server's URL (to its `postgres` database), once it has started. The start (seconds: `initdb`, `pg_ctl`)
    /// runs on a thread of the tests' own (`BlockingWork`): on a Swift worker thread it would stall every test of the run (the
    /// concurrency pool has a thread per core) and make unrelated timing-sensitive tests fail.
    static let server = Task { try await BlockingWork.run { start() } }

    static var url: String {
        get async throws { try await server.value }
    }

    private static func start() -> String {
        let directory = newDirectory()
        let url = run("start", directory)
        startedDirectory = directory
        atexit {
            guard let directory = TestPostgres.startedDirectory else { return }
            _ = TestPostgres.run("stop", directory)
            try? FileManager.default.removeItem(atPath: directory)
        }
        return url
    }

    nonisolated(unsafe) private static var startedDirectory: String?

    /// Where a server's cluster goes: directly under the temporary directory, which the `postgres` user must be able
    /// to enter when the tests run as root.
    static func newDirectory() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-test-pg-\(UUID().uuidString.prefix(8))").path
    }

    /// `run` on NIO's blocking pool, for a caller on a Swift worker thread (which it must not block for seconds).
    static func runBlocking(_ arguments: String...) async throws -> String {
        try await BlockingWork.run { run(arguments) }
    }

    /// A server of one test's own, for a test that stops and starts it (the shared one must stay up for the others).
    struct OwnServer {
        let directory: String
        let url: String

        /// Runs `body` with a new server, stopped and removed afterwards.
        static func with<T>(_ body: (OwnServer) async throws -> T) async throws -> T {
            let directory = TestPostgres.newDirectory()
            let server = OwnServer(directory: directory, url: try await runBlocking("start", directory))
            let result: T
            do {
                result = try await body(server)
            } catch {
                try? await server.remove()
                throw error
            }
            try await server.remove()
            return result
        }

        /// Stops the server (`pg_ctl stop -m fast`: sessions are ended, as in a restart).
        func stop() async throws { _ = try await runBlocking("stop", directory) }
        /// Starts it again, on the same port, with everything it held.
        func start() async throws { _ = try await runBlocking("start", directory) }

        private func remove() async throws {
            try await stop()
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    /// Runs `scripts/postgres`; a failure stops the tests with its message (the server is not optional).
    ///
    /// Spawned with every descriptor above standard error closed in the child: this process has sockets open (other
    /// tests' servers and connections), and a child that held copies would keep them alive after this process closed
    /// them (a closed listener still taking connections, then resetting them; a closed connection whose peer never
    /// sees the end), or, for the server it starts, for as long as the server runs. Output goes through a file.
    @discardableResult
    static func run(_ arguments: String...) -> String { run(arguments) }

    static func run(_ arguments: [String]) -> String {
        let (status, text) = script("postgres", arguments)
        guard status == 0 else { fatalError("scripts/postgres \(arguments.joined(separator: " ")) failed (\(status)): \(text)") }
        return text
    }

    /// Runs `scripts/<name>` with `arguments` (spawned as `run` says); its exit status and its output, trimmed.
    /// `environment` (`NAME=value`) is added to the script's own.
    static func script(_ name: String, _ arguments: [String], environment: [String] = []) -> (status: Int32, output: String) {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-\(name)-\(UUID().uuidString).out").path
        defer { try? FileManager.default.removeItem(atPath: output) }
        let status = spawn(["env"] + environment + ["bash", packageRoot + "/scripts/" + name] + arguments, output: output)
        let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        return (status, text.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// `posix_spawn` of `arguments` (the first found on the `PATH`) with standard input from `/dev/null`, standard
    /// output and error to `output`, and nothing else inherited; waits for it and returns its exit status.
    private static func spawn(_ arguments: [String], output: String) -> Int32 {
        typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else {
            fatalError("this C library cannot close inherited descriptors in a spawned process (glibc 2.34 or later can)")
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        _ = unsafeBitCast(symbol, to: CloseFrom.self)(&actions, 3)
        let argv = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid = pid_t()
        guard posix_spawnp(&pid, arguments[0], &actions, nil, argv, environ) == 0 else { return -1 }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        // Exited normally (no signal): its exit code; otherwise -1.
        return status & 0x7f == 0 ? (status >> 8) & 0xff : -1
    }

    static var packageRoot: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().path
    }

    /// A connection of the test's own (not the gateway's) to `url`. Its deadline is generous: the run's tests start
    /// together, and a loaded two-core machine queues forty `CREATE DATABASE`s and their migrations for seconds.
    static func connect(_ url: String) throws -> GatehouseStorage.PostgresDatabase {
        try GatehouseStorage.PostgresDatabase(url: url, queryTimeout: .seconds(60), logger: Logger(label: "test-postgres"))
    }

    /// A new, empty database on the shared server; its URL.
    static func freshDatabase() async throws -> String {
        let name = "test_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16).lowercased()
        let server = try connect(try await url)
        _ = try await whileRunning(server) {
            try await server.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"))
        }
        return try await url.replacingOccurrences(of: "/postgres?", with: "/\(name)?")
    }
}
