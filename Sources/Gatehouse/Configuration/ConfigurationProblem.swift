/// One thing wrong with the configuration, at the key path where it was found.
public struct ConfigurationProblem: Sendable, Equatable, CustomStringConvertible {
    public let keyPath: String
    public let message: String

    public init(_ keyPath: String, _ message: String) {
        self.keyPath = keyPath
        self.message = message
    }

    public var description: String { "\(keyPath): \(message)" }
}

/// Every problem found in one pass; the server never starts with any of them.
public struct ConfigurationError: Error, CustomStringConvertible {
    public let problems: [ConfigurationProblem]
    public var description: String {
        "invalid configuration (\(problems.count) problem\(problems.count == 1 ? "" : "s")):\n"
            + problems.map { "  - \($0)" }.joined(separator: "\n")
    }
}
