import AsyncHTTPClient
import Foundation

/// `gatehouse probe`: asks a running gateway's `/healthz`, as a container's `HEALTHCHECK` does (an image without curl).
public enum HealthProbe {
    /// The address the gateway of this environment listens on: `GATEHOUSE_LISTEN_PORT` (the image sets 8080), on
    /// loopback.
    public static func defaultURL(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        "http://127.0.0.1:\(environment["GATEHOUSE_LISTEN_PORT"].flatMap(Int.init) ?? 8080)/healthz"
    }

    /// `nil` when `url` answered `200` within `timeout`, else what went wrong.
    public static func problem(url: String, timeout: Duration = .seconds(3)) async -> String? {
        do {
            let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: url), timeout: .init(timeout))
            return response.status == .ok ? nil : "\(url) answered \(response.status.code)"
        } catch {
            return "\(url) did not answer: \(error)"
        }
    }
}
