import HummingbirdBcrypt
import NIOPosix

/// bcrypt (hummingbird-auth) on the thread pool: a slow hash must not hold an event loop.
public struct PINHasher: Sendable {
    public let cost: UInt8

    public init(cost: UInt8 = 12) { self.cost = cost }

    public func hash(_ pin: String) async throws -> String {
        let cost = cost
        return try await NIOThreadPool.singleton.runIfActive { Bcrypt.hash(pin, cost: cost) }
    }

    public func verify(_ pin: String, hash: String) async throws -> Bool {
        try await NIOThreadPool.singleton.runIfActive { Bcrypt.verify(pin, hash: hash) }
    }
}
