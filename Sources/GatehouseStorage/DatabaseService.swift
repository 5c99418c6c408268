import ServiceLifecycle

/// Closes the database after the server has stopped taking requests.
struct DatabaseService: Service {
    let database: SQLiteDatabase

    func run() async throws {
        try? await gracefulShutdown()
        try await database.close()
    }
}
