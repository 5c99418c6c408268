import Foundation
import GatehouseCore

/// What the operator console shows of the apps, read from this replica's own metrics: the requests, the failures to
/// reach each app by kind, and the median and 99th percentile of its requests' time (the histogram bucket each falls
/// in: "at most"), since this replica started.
struct AppHealth: Sendable, Equatable {
    let slug: String
    let name: String
    let requests: Int
    let failures: [String: Int]
    let p50Seconds: Double?
    let p99Seconds: Double?

    /// One `name{labels} value` line of the Prometheus text exposition.
    struct Sample {
        let name: String
        let labels: [String: String]
        let value: Double
    }

    static func samples(_ exposition: String) -> [Sample] {
        exposition.split(separator: "\n").compactMap { line in
            guard !line.hasPrefix("#"), let brace = line.firstIndex(of: "{"), let close = line.lastIndex(of: "}"),
                let value = Double(line[line.index(after: close)...].trimmingCharacters(in: .whitespaces))
            else { return nil }
            var labels: [String: String] = [:]
            for pair in line[line.index(after: brace)..<close].split(separator: ",") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                if parts.count == 2 { labels[String(parts[0])] = String(parts[1].dropFirst().dropLast()) }
            }
            return Sample(name: String(line[..<brace]), labels: labels, value: value)
        }
    }

    static func of(_ apps: [AppConfiguration], exposition: String) -> [AppHealth] {
        let samples = samples(exposition)
        return apps.map { app in
            let mine = samples.filter { $0.labels["app"] == app.slug }
            var failures: [String: Int] = [:]
            for sample in mine where sample.name == "gatehouse_upstream_failures_total" {
                failures[sample.labels["kind"] ?? "", default: 0] += Int(sample.value)
            }
            let requests = mine.filter { $0.name == "gatehouse_http_requests_total" && $0.labels["route"] == RouteClass.proxy.rawValue }
                .reduce(0) { $0 + Int($1.value) }
            // The proxied requests' duration histogram: cumulative counts by upper bound.
            var buckets: [Double: Double] = [:]
            for sample in mine
            where sample.name == "gatehouse_http_request_duration_seconds_bucket" && sample.labels["route"] == RouteClass.proxy.rawValue {
                buckets[sample.labels["le"] == "+Inf" ? .infinity : Double(sample.labels["le"] ?? "") ?? .infinity, default: 0] += sample.value
            }
            let ordered = buckets.sorted { $0.key < $1.key }
            func quantile(_ q: Double) -> Double? {
                guard let total = ordered.last?.value, total > 0 else { return nil }
                return ordered.first { $0.value >= q * total }?.key
            }
            return AppHealth(
                slug: app.slug, name: app.name, requests: requests, failures: failures, p50Seconds: quantile(0.5), p99Seconds: quantile(0.99))
        }
    }
}
