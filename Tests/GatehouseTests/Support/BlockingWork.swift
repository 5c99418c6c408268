import NIOPosix

/// The tests' own blocking work (starting and stopping PostgreSQL and Synapse, reading raw sockets): on threads of its
/// own, never on NIO's shared pool, which every gateway under test uses for its SQLite queries. A server's start of
/// twenty seconds there held every SQLite query of every test running beside it (and their time bounds with them).
enum BlockingWork {
    static let pool: NIOThreadPool = {
        let pool = NIOThreadPool(numberOfThreads: 4)
        pool.start()
        return pool
    }()

    static func run<T: Sendable>(_ body: @Sendable @escaping () throws -> T) async throws -> T {
        try await pool.runIfActive(body)
    }
}
