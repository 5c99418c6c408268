import Logging

/// What every answered request leaves behind, whichever path served it: `gatehouse_http_requests_total` and
/// `gatehouse_http_request_duration_seconds` (to the response head), and one log line with the request id (the
/// logger's), method, path (never the query), route class, app, status and duration.
enum RequestLog {
    static func record(
        metrics: GatewayMetrics, logger: Logger, method: String, path: String, route: RouteClass, app: String, status: Int, duration: Duration
    ) {
        metrics.request(route: route, status: status, app: app, duration: duration)
        let (seconds, attoseconds) = duration.components
        let milliseconds = Double(seconds) * 1000 + Double(attoseconds / 1_000_000_000_000) / 1000
        logger.info(
            "request",
            metadata: [
                "method": .string(method), "path": .string(path), "route": .string(route.rawValue), "app": .string(app),
                "status": .stringConvertible(status), "duration_ms": .stringConvertible(milliseconds),
            ])
    }
}
