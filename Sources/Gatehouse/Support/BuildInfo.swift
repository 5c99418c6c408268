import NIOConcurrencyHelpers

/// What this binary is: the product's version (`CHANGELOG.md`), and the commit and day it was built from, which the
/// executable's build stamp records at start (`unknown` in tests and in a build outside a git checkout). Said by
/// `gatehouse --version`, the start's log line, `/healthz` (asked for JSON) and the `gatehouse_build_info` metric.
public struct BuildInfo: Sendable, Equatable {
    public let version: String
    public let commit: String
    public let built: String

    /// The product's version: raised with each entry of `CHANGELOG.md`.
    public static let version = "0.16.0"

    private static let recorded = NIOLockedValueBox(BuildInfo(version: version, commit: "unknown", built: "unknown"))

    public static var current: BuildInfo { recorded.withLockedValue { $0 } }

    /// Set once by the executable, before the gateway is built.
    public static func record(commit: String, built: String) {
        recorded.withLockedValue { $0 = BuildInfo(version: version, commit: commit, built: built) }
    }

    /// `0.11.0 (commit 1a2b3c4d5e6f, built 2026-11-29)`.
    public var line: String { "\(version) (commit \(commit), built \(built))" }

    public var fields: [(String, String)] { [("version", version), ("commit", commit), ("built", built)] }
}
