import GatehouseCore

extension ClientAddressResolver {
    /// The trace a request belongs to: the caller's (`incomingTrace`), else a new one.
    func trace(peer: String?, traceparent: String?) -> TraceContext {
        incomingTrace(peer: peer, traceparent: traceparent) ?? .start()
    }

    /// The caller's trace, when a trusted proxy sends a well-formed `traceparent` (anyone else's is ignored: a client
    /// does not choose the operators' trace ids).
    func incomingTrace(peer: String?, traceparent: String?) -> TraceContext? {
        guard let peer = peer.flatMap(IPAddress.init), isTrusted(peer) else { return nil }
        return TraceContext.continuing(traceparent)
    }
}
