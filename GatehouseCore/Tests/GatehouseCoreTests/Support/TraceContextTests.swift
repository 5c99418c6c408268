import Testing

@testable import GatehouseCore

@Suite struct TraceContextTests {
    static let trace = "4bf92f3577b34da6a3ce929d0e0e4736"

    @Test func aWellFormedTraceparentIsContinuedUnderANewSpan() throws {
        let context = try #require(TraceContext.continuing("00-\(Self.trace)-00f067aa0ba902b7-01"))
        #expect(context.traceID == Self.trace && context.parentSpanID == "00f067aa0ba902b7" && context.spanID != "00f067aa0ba902b7")
        #expect(context.traceparent == "00-\(Self.trace)-\(context.spanID)-01" && context.spanID.count == 16)
        // A later version is read by its first four fields.
        #expect(TraceContext.continuing("cc-\(Self.trace)-00f067aa0ba902b7-01-what-comes-next")?.traceID == Self.trace)
    }

    @Test(arguments: [
        "", "garbage", "00-\(trace)-00f067aa0ba902b7", "00-\(trace)-00f067aa0ba902b7-01-extra", "ff-\(trace)-00f067aa0ba902b7-01",
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "00-\(trace)-0000000000000000-01", "00-\(trace)-00f067aa0ba902b-01", "00-\(trace)x-00f067aa0ba902b7-01", "0-\(trace)-00f067aa0ba902b7-01",
        "00-\(trace)-00f067aa0ba902b7-1", "00-\(trace)-00f067aa0ba902g7-01",
    ])
    func aMalformedTraceparentStartsNothing(text: String) {
        #expect(TraceContext.continuing(text) == nil, "\(text)")
    }

    @Test func aNewTraceIsSampledWithFreshIds() {
        let first = TraceContext.start(), second = TraceContext.start()
        #expect(first.traceID.count == 32 && first.spanID.count == 16 && first.flags == "01" && first.parentSpanID == nil)
        #expect(first.traceID != second.traceID && TraceContext.continuing(first.traceparent)?.traceID == first.traceID)
    }
}
