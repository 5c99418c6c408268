import Hummingbird
import Logging

/// The operators' listener: `GET /metrics` in Prometheus's text format, on its own address (`metrics.host`,
/// `metrics.port`; loopback by default), never on the members' listener.
enum MetricsServer {
    static func application(_ metrics: GatewayMetrics, configuration: MetricsConfiguration, logger: Logger) -> some ApplicationProtocol {
        let router = Router()
        router.get("metrics") { _, _ in response(metrics) }
        var logger = logger
        logger[metadataKey: "listener"] = "metrics"
        return Application(
            router: router, configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: nil),
            logger: logger)
    }

    static func response(_ metrics: GatewayMetrics) -> Response {
        PlainTextResponse.make(metrics.exposition(), contentType: "text/plain; version=0.0.4; charset=utf-8")
    }
}
