import Foundation
import Logging
import PostgresNIO

@testable import Gatehouse

/// A real PostgreSQL server for the tests: started once per test process by `scripts/postgres` in a temporary
/// directory on loopback, stopped when the process exits. Each test gets a database of its own.
enum TestPostgres {
    /// The server's directory and URL (to its `postgres` database).
    static let server: (directory: String, url: String) = start()

    private static func start() -> (String, String) {
        // Directly under the temporary directory: the `postgres` user must be able to enter it when tests run as root.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-test-pg-\(UUID().uuidString.prefix(8))").path
        let url = run("start", directory)
        startedDirectory = directory
        atexit {
            guard let directory = TestPostgres.startedDirectory else { return }
            _ = TestPostgres.run("stop", directory)
            try? FileManager.default.removeItem(atPath: directory)
        }
        return (directory, url)
    }

    nonisolated(unsafe) private static var startedDirectory: String?

    /// Runs `scripts/postgres`; a failure stops the tests with its message (the server is not optional). Through
    /// `system(3)`, which waits for the script itself: Foundation's `Process` here never noticed it had ended. Its
    /// output goes through a file, as the server it starts must not inherit a pipe of ours.
    @discardableResult
    static func run(_ arguments: String...) -> String {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-pg-\(UUID().uuidString).out")
        defer { try? FileManager.default.removeItem(at: output) }
        let command = (["bash", packageRoot + "/scripts/postgres"] + arguments).map { "'\($0)'" }.joined(separator: " ")
        let status = system("\(command) >'\(output.path)' 2>&1 </dev/null")
        let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
        guard status == 0 else { fatalError("scripts/postgres \(arguments.joined(separator: " ")) failed (\(status)): \(text)") }
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static var packageRoot: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().path
    }

    /// A new, empty database on the shared server; its URL.
    static func freshDatabase() async throws -> String {
        let name = "test_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16).lowercased()
        let server = try PostgresDatabase(url: server.url, logger: Logger(label: "test-postgres"))
        _ = try await whileRunning(server) {
            try await server.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"))
        }
        return url(database: name)
    }

    static func url(database: String) -> String {
        server.url.replacingOccurrences(of: "/postgres?", with: "/\(database)?")
    }
}
