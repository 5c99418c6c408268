import Foundation

/// A request's place in a distributed trace (W3C Trace Context, `traceparent`): the trace it belongs to, the
/// gateway's own span for it, and the span it came from when a trusted proxy said so.
public struct TraceContext: Sendable, Equatable {
    /// 32 lower-case hex digits, never all zero.
    public let traceID: String
    /// The gateway's span for this request: 16 lower-case hex digits. Apps get it as their parent.
    public let spanID: String
    /// The caller's span, when the request arrived with a `traceparent` the gateway accepted.
    public let parentSpanID: String?
    /// `01` when sampled.
    public let flags: String

    public init(traceID: String, spanID: String, parentSpanID: String?, flags: String) {
        self.traceID = traceID
        self.spanID = spanID
        self.parentSpanID = parentSpanID
        self.flags = flags
    }

    /// The span a well-formed `traceparent` names, as it is (its trace, its span, no parent known).
    public static func named(by traceparent: String?) -> TraceContext? {
        continuing(traceparent).map { TraceContext(traceID: $0.traceID, spanID: $0.parentSpanID ?? $0.spanID, parentSpanID: nil, flags: $0.flags) }
    }

    /// `traceparent` as apps get it: this trace, the gateway's span as their parent.
    public var traceparent: String { "00-\(traceID)-\(spanID)-\(flags)" }

    /// A new trace (no caller, or one the gateway does not trust), sampled.
    public static func start() -> TraceContext {
        TraceContext(traceID: randomHex(bytes: 16), spanID: randomHex(bytes: 8), parentSpanID: nil, flags: "01")
    }

    /// The gateway's span in the caller's trace, when `traceparent` is well-formed (W3C Trace Context §3.2: version
    /// `00` exactly as specified; a later version read by its first four fields; `ff`, upper-case hex or an all-zero
    /// id refused); `nil` otherwise.
    public static func continuing(_ traceparent: String?) -> TraceContext? {
        guard let traceparent else { return nil }
        let fields = traceparent.split(separator: "-", omittingEmptySubsequences: false)
        guard fields.count >= 4, let version = fields.first, version.count == 2, isHex(version), version != "ff" else { return nil }
        if version == "00" && fields.count != 4 { return nil }
        let (trace, parent, flags) = (fields[1], fields[2], fields[3])
        guard trace.count == 32, parent.count == 16, flags.count == 2, isHex(trace), isHex(parent), isHex(flags),
            trace.contains(where: { $0 != "0" }), parent.contains(where: { $0 != "0" })
        else { return nil }
        return TraceContext(traceID: String(trace), spanID: randomHex(bytes: 8), parentSpanID: String(parent), flags: String(flags))
    }

    static func isHex(_ text: Substring) -> Bool {
        text.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0) }
    }

    /// `count` random bytes (8 or 16) as lower-case hex, never all zero: made for every proxied request, from the
    /// thread's generator (`SecureRandom`), written in one pass.
    static func randomHex(bytes count: Int) -> String {
        withUnsafeTemporaryAllocation(byteCount: count, alignment: 8) { bytes in
            repeat { SecureRandom.fill(bytes) } while !bytes.contains { $0 != 0 }
            return String(lowerHex: UnsafeRawBufferPointer(bytes))
        }
    }
}
