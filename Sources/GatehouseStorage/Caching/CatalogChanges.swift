/// Tells the gateway that the stored app catalog may have changed: another replica's change heard on PostgreSQL, or
/// the listening connection back after an outage (whatever changed meanwhile was not heard). Signals while one is
/// still waiting make one.
public final class CatalogChanges: Sendable {
    public let signals: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation

    public init() {
        (signals, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    public func signal() { continuation.yield() }
}
