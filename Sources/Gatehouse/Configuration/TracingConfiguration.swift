import Foundation

/// Exporting the gateway's spans (`tracing.*`): off unless an OTLP/HTTP endpoint is named.
public struct TracingConfiguration: Sendable, Equatable {
    /// An OpenTelemetry collector's OTLP/HTTP base URL (`http://collector:4318`): spans go to `<it>/v1/traces`, as JSON.
    public var otlpEndpoint: URL?
    /// The `service.name` the spans carry.
    public var serviceName: String

    public init(otlpEndpoint: URL? = nil, serviceName: String = "gatehouse") {
        self.otlpEndpoint = otlpEndpoint
        self.serviceName = serviceName
    }
}
