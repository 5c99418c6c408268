import GatehouseCore

extension ClientAddressResolver {
    /// The trace a request belongs to: the caller's, when a trusted proxy sends a well-formed `traceparent`
    /// (anyone else's is ignored: a client does not choose the operators' trace ids), else a new one.
    func trace(peer: String?, traceparent: String?) -> TraceContext {
        if let peer = peer.flatMap(IPAddress.init), isTrusted(peer), let continued = TraceContext.continuing(traceparent) {
            return continued
        }
        return .start()
    }
}
