import CoreMetrics
import Foundation
import GatehouseCore
import NIOConcurrencyHelpers
import Prometheus

/// Every metric the gateway exports, recorded through swift-metrics into one Prometheus registry of its own (so
/// that several gateways in one process, as in the tests, never share counters). Names follow Prometheus's
/// conventions (`gatehouse_` prefix, `_total`, `_seconds`); labels only ever hold bounded values: route classes,
/// status classes, configured app slugs, fixed reasons — never a member, a path or a query.
public final class GatewayMetrics: Sendable {
    public let registry: PrometheusCollectorRegistry
    let factory: PrometheusMetricsFactory
    /// Figures other parts keep themselves (cache and queue statistics), read into the registry at each scrape.
    private let collectors = NIOLockedValueBox<[@Sendable () -> Void]>([])
    /// The request metrics' handles by route class, status class and app (a bounded set).
    private let requestHandles = NIOLockedValueBox<[RequestKey: RequestHandles]>([:])
    /// Every other counter's handle by name and labels (bounded too: labels only hold bounded values).
    private let counters = NIOLockedValueBox<[CounterKey: CoreMetrics.Counter]>([:])
    /// What the event loops counted and have not added to the registry yet (`LoopTallies`).
    let tallies = LoopTallies()

    public init(build: BuildInfo = .current) {
        registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = [
            .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
            .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10), .seconds(30),
        ]
        self.factory = factory
        CoreMetrics.Gauge(label: "gatehouse_build_info", dimensions: build.fields, factory: factory).record(1)
    }

    /// The registry's text exposition, after every collector ran.
    public func exposition() -> String {
        addTallies()
        for collect in collectors.withLockedValue({ $0 }) { collect() }
        return registry.emitToString()
    }

    /// The counter `name` with `dimensions`, made through the registry the first time only: some are counted on
    /// every proxied page (the banner's), and the registry sanitises the name and every label at each making.
    func counter(_ name: String, _ dimensions: [(String, String)] = []) -> CoreMetrics.Counter {
        counter(CounterKey(name: name, dimensions: dimensions))
    }

    func counter(_ key: CounterKey) -> CoreMetrics.Counter {
        counters.withLockedValue { counters in
            if let found = counters[key] { return found }
            let made = CoreMetrics.Counter(label: key.name, dimensions: key.dimensions, factory: factory)
            counters[key] = made
            return made
        }
    }

    struct CounterKey: Hashable {
        let name: String
        /// Label names and values, in turn.
        let labels: [String]

        init(name: String, dimensions: [(String, String)]) {
            self.name = name
            labels = dimensions.flatMap { [$0.0, $0.1] }
        }

        var dimensions: [(String, String)] {
            stride(from: 0, to: labels.count - 1, by: 2).map { (labels[$0], labels[$0 + 1]) }
        }
    }

    /// A counter that follows a running total kept elsewhere: at each scrape it moves by what the total grew.
    func follow(_ name: String, _ dimensions: [(String, String)] = [], total: @escaping @Sendable () -> Int) {
        let counter = counter(name, dimensions)
        let reported = NIOLockedValueBox(0)
        collectors.withLockedValue {
            $0.append {
                let now = total()
                let growth = reported.withLockedValue { reported in
                    defer { reported = max(reported, now) }
                    return now - reported
                }
                if growth > 0 { counter.increment(by: growth) }
            }
        }
    }

    /// A gauge read at each scrape.
    func gauge(_ name: String, _ dimensions: [(String, String)] = [], value: @escaping @Sendable () -> Double) {
        let gauge = CoreMetrics.Gauge(label: name, dimensions: dimensions, factory: factory)
        collectors.withLockedValue { $0.append { gauge.record(value()) } }
    }

    // MARK: What the edge records

    /// One request answered: its route class, status class and app (empty when none), and the time to its head.
    func request(route: RouteClass, status: Int, app: String, duration: Duration) {
        let key = RequestKey(route: route, statusClass: min(max(status / 100, 1), 5), app: app)
        let (seconds, attoseconds) = duration.components
        let nanoseconds = seconds * 1_000_000_000 + attoseconds / 1_000_000_000
        // On an event loop, kept on the loop and added in batches (the handles' lock and the histogram's are shared).
        guard let tally = tallies.current else { return record(key, nanoseconds: nanoseconds) }
        if let full = tally.add(key, nanoseconds: nanoseconds) { add(full) }
    }

    /// One request into the registry. The handles are looked up in a dictionary of this gateway's own, not made
    /// anew through the registry (which checks the name and every label each time).
    func record(_ key: RequestKey, nanoseconds: Int64) {
        let handles = requestHandles.withLockedValue { handles in
            if let found = handles[key] { return found }
            let made = RequestHandles(
                count: counter(
                    "gatehouse_http_requests_total", [("route", key.route.rawValue), ("status", "\(key.statusClass)xx"), ("app", key.app)]),
                duration: CoreMetrics.Timer(
                    label: "gatehouse_http_request_duration_seconds", dimensions: [("route", key.route.rawValue), ("app", key.app)],
                    factory: factory))
            handles[key] = made
            return made
        }
        handles.count.increment()
        handles.duration.recordNanoseconds(nanoseconds)
    }

    struct RequestKey: Hashable {
        let route: RouteClass
        let statusClass: Int
        let app: String
    }

    private struct RequestHandles: Sendable {
        let count: CoreMetrics.Counter
        let duration: CoreMetrics.Timer
    }

    /// A request the data plane answered on its event loop (`gatehouse_data_plane_requests_total`, by app): which
    /// path served what, beside the request counters both paths keep.
    func dataPlaneRequest(app: String) {
        count("gatehouse_data_plane_requests_total", [("app", app)])
    }

    /// Adds one to a counter: on an event loop in its tally (as `request`), elsewhere at once.
    func count(_ name: String, _ dimensions: [(String, String)] = []) {
        guard let tally = tallies.current else { return counter(name, dimensions).increment() }
        tally.count(CounterKey(name: name, dimensions: dimensions))
    }

    /// A request to an app that did not get an answer from it.
    func upstreamFailure(app: String, kind: UpstreamFailureKind) {
        counter("gatehouse_upstream_failures_total", [("app", app), ("kind", kind.rawValue)]).increment()
    }

    /// What the store holds (read by `StoreGauges`).
    func storeGauges(activeSessions: Int, provisioningWaiting: Int, provisioningFailed: Int) {
        CoreMetrics.Gauge(label: "gatehouse_active_sessions", factory: factory).record(activeSessions)
        CoreMetrics.Gauge(label: "gatehouse_provisioning_waiting", factory: factory).record(provisioningWaiting)
        CoreMetrics.Gauge(label: "gatehouse_provisioning_failed", factory: factory).record(provisioningFailed)
    }

    /// A verification code refused by a rate limit (`member` or `phone_number`).
    func codeRateLimited(limit: String) {
        counter("gatehouse_verification_codes_rate_limited_total", [("limit", limit)]).increment()
    }

    /// A refresh of a session's tokens at the provider; a failure by its fixed reason.
    func tokenRefresh(failure: OIDCError?) {
        if let failure {
            counter("gatehouse_token_refresh_failures_total", [("reason", failure.reason)]).increment()
        } else {
            counter("gatehouse_token_refreshes_total").increment()
        }
    }

    /// A product event (product §7) as its counter; `detail` becomes the `reason` label where it is a fixed reason.
    func event(_ name: EventName, detail: String?) {
        let (metric, hasReason) = Self.eventMetrics[name] ?? ("gatehouse_events_total", false)
        count(metric, hasReason ? [("reason", detail ?? "unknown")] : [])
    }

    static let eventMetrics: [EventName: (name: String, hasReason: Bool)] = [
        .ssoLoginAttempt: ("gatehouse_sign_in_attempts_total", false),
        .ssoLoginSuccess: ("gatehouse_sign_in_successes_total", false),
        .ssoLoginFailure: ("gatehouse_sign_in_failures_total", true),
        .ssoLogout: ("gatehouse_sign_outs_total", false),
        .upgradeBannerShown: ("gatehouse_banner_shown_total", false),
        .upgradeBannerTapped: ("gatehouse_banner_tapped_total", false),
        .upgradeBannerDismissed: ("gatehouse_banner_dismissed_total", false),
        .registrationStarted: ("gatehouse_registrations_started_total", false),
        .registrationCompleted: ("gatehouse_registrations_completed_total", false),
        .registrationFailed: ("gatehouse_registrations_failed_total", true),
        .registrationResumed: ("gatehouse_registrations_resumed_total", false),
        .stateInconsistencyDetected: ("gatehouse_state_inconsistencies_total", false),
        .stepUp: ("gatehouse_step_ups_total", true),
    ]
}

/// Why a request to an app got no usable answer from it: no connection (or no address), no answer in time, the
/// connection broke off, the allowlist refused the host or a redirect, or the body was corrupt or a bomb.
enum UpstreamFailureKind: String, Sendable {
    case connect, timeout, reset, blocked, invalid
}
