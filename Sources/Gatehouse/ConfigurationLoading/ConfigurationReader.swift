import Configuration
import Foundation
import NIOConcurrencyHelpers

/// Reads typed values by key path through swift-configuration — `GATEHOUSE_…` environment variables over the
/// configuration file — and collects problems instead of stopping.
///
/// A key path `oidc.client_id` is `{"oidc": {"client_id": …}}` in the file and `GATEHOUSE_OIDC_CLIENT_ID` in the
/// environment; the environment wins. Secrets are read only from the environment or from the file a
/// `GATEHOUSE_…_FILE` variable names. Every lookup reaches `Accesses`, which keeps the keys asked for (so that a
/// key in the file nobody asked for is reported as unknown) and every value a provider could not give as the type
/// asked for.
///
/// Two pieces stay hand-written, because swift-configuration's JSON snapshot cannot do them: the file is flattened
/// into an `InMemoryProvider` by `FileValues` (the library's snapshot rejects the `apps` list, whose elements are
/// objects, and reads `true` as the number 1), and values that are not scalars or string lists (`apps`,
/// `brand.strings`) are read from the parsed file directly.
struct ConfigurationReader {
    private let file: [String: Any]
    private let fileValues: FileValues
    private let environment: [String: String]
    /// The environment over the file.
    private let settings: ConfigReader
    /// The environment alone: where secrets come from.
    private let secrets: ConfigReader
    private let accesses = Accesses()
    private let readSecretFile: (String) throws -> String
    /// Subtrees read from the parsed file directly (lists of objects, maps).
    private var readWhole: Set<String> = []

    init(file: [String: Any], environment: [String: String], readSecretFile: @escaping (String) throws -> String) {
        self.file = file
        self.environment = environment
        self.readSecretFile = readSecretFile
        fileValues = FileValues(file)
        let variables = KeyMappingProvider(upstream: EnvironmentVariablesProvider(environmentVariables: environment)) { key in
            key.prepending(["gatehouse"])
        }
        settings = ConfigReader(providers: [variables, InMemoryProvider(name: "file", values: fileValues.values)], accessReporter: accesses)
        secrets = ConfigReader(provider: variables, accessReporter: accesses)
    }

    static func environmentName(_ keyPath: String) -> String {
        "GATEHOUSE_" + keyPath.uppercased().replacingOccurrences(of: ".", with: "_")
    }

    var problems: [ConfigurationProblem] { accesses.problems(environment: environment) }

    func report(_ keyPath: String, _ message: String) {
        accesses.report(ConfigurationProblem(keyPath, message))
    }

    /// The raw file value at `keyPath` (a list of objects, a map), marking the whole subtree as understood.
    mutating func fileValue(_ keyPath: String) -> Any? {
        readWhole.insert(keyPath)
        var node: Any? = file
        for component in keyPath.split(separator: ".") {
            node = (node as? [String: Any])?[String(component)]
        }
        return node
    }

    func string(_ keyPath: String, default defaultValue: String) -> String {
        settings.string(forKey: ConfigKey(keyPath), default: defaultValue)
    }

    func optionalString(_ keyPath: String) -> String? {
        settings.string(forKey: ConfigKey(keyPath))
    }

    func int(_ keyPath: String, default defaultValue: Int, range: ClosedRange<Int>) -> Int {
        optionalInt(keyPath, range: range) ?? defaultValue
    }

    func optionalInt(_ keyPath: String, range: ClosedRange<Int>) -> Int? {
        guard let value = settings.int(forKey: ConfigKey(keyPath)) else { return nil }
        guard range.contains(value) else {
            report(keyPath, "must be between \(range.lowerBound) and \(range.upperBound), got \(value)")
            return nil
        }
        return value
    }

    func optionalBool(_ keyPath: String) -> Bool? {
        settings.bool(forKey: ConfigKey(keyPath))
    }

    func bool(_ keyPath: String, default defaultValue: Bool) -> Bool {
        settings.bool(forKey: ConfigKey(keyPath), default: defaultValue)
    }

    /// A list: a JSON array of strings in the file, or a comma-separated environment value.
    func stringList(_ keyPath: String, default defaultValue: [String]) -> [String] {
        settings.stringArray(forKey: ConfigKey(keyPath), default: defaultValue).filter { !$0.isEmpty }
    }

    mutating func stringMap(_ keyPath: String) -> [String: String] {
        guard let fromFile = fileValue(keyPath) else { return [:] }
        guard let map = fromFile as? [String: Any], map.values.allSatisfy({ $0 is String }) else {
            report(keyPath, "must be an object of strings")
            return [:]
        }
        return map.compactMapValues { $0 as? String }
    }

    /// A secret: never from the file; from `GATEHOUSE_<KEY>` or the file named by `GATEHOUSE_<KEY>_FILE`.
    func secret(_ keyPath: String) -> String? {
        let name = Self.environmentName(keyPath)
        if fileValues.holds(keyPath) {
            report(keyPath, "is a secret and is not read from the configuration file; set \(name) or \(name)_FILE")
        }
        if let value = secrets.string(forKey: ConfigKey(keyPath), isSecret: true), !value.isEmpty { return value }
        guard let path = secrets.string(forKey: ConfigKey(keyPath + "_file")) else { return nil }
        do {
            let value = try readSecretFile(path).trimmingCharacters(in: .whitespacesAndNewlines)
            if value.isEmpty { report(keyPath, "the file named by \(name)_FILE is empty") }
            return value.isEmpty ? nil : value
        } catch {
            report(keyPath, "cannot read the file named by \(name)_FILE")
            return nil
        }
    }

    /// The text of the file that `keyPath` names (a key file: not a secret itself, so the configuration file may name
    /// it), `nil` when it names none; a file that cannot be read is reported under `keyPath`.
    func text(ofFileNamedBy keyPath: String) -> String? {
        guard let path = optionalString(keyPath) else { return nil }
        do {
            return try readSecretFile(path)
        } catch {
            report(keyPath, "cannot read \(path)")
            return nil
        }
    }

    /// Whether a value from the JSON file is `true` or `false`. (On Linux `1 is Bool` holds too: JSON's numbers and
    /// booleans both arrive as `NSNumber`, told apart only by their type encoding.)
    static func isBoolean(_ value: Any) -> Bool {
        guard let number = value as? NSNumber else { return false }
        return String(cString: number.objCType) == "c"
    }

    /// Key paths present in the file that nothing read: almost always a typo.
    func unknownFileKeys() -> [String] {
        let asked = accesses.asked
        return fileValues.keyPaths.filter { path in
            !asked.contains(path) && !readWhole.contains { path == $0 || path.hasPrefix($0 + ".") }
        }.sorted()
    }
}

/// Every lookup through the readers: the key paths asked for, and the problems in the order they arose.
private final class Accesses: AccessReporter, Sendable {
    private struct State {
        var asked: Set<String> = []
        var problems: [Problem] = []
    }

    /// A value a provider could not give as the type asked for, or a problem the loader reported itself.
    private enum Problem {
        case mismatch(keyPath: String, type: ConfigType, fromEnvironment: Bool)
        case reported(ConfigurationProblem)
    }

    private let state = NIOLockedValueBox(State())

    var asked: Set<String> { state.withLockedValue { $0.asked } }

    func report(_ event: AccessEvent) {
        let keyPath = event.metadata.key.components.joined(separator: ".")
        // A failure stops the lookup at the provider that failed: the environment, else the file.
        let failed = event.providerResults.first { if case .failure = $0.result { true } else { false } }
        state.withLockedValue { state in
            state.asked.insert(keyPath)
            if let failed {
                state.problems.append(
                    .mismatch(keyPath: keyPath, type: event.metadata.valueType, fromEnvironment: failed.providerName.contains("Environment")))
            }
        }
    }

    func report(_ problem: ConfigurationProblem) {
        state.withLockedValue { $0.problems.append(.reported(problem)) }
    }

    func problems(environment: [String: String]) -> [ConfigurationProblem] {
        state.withLockedValue { $0.problems }.map { problem in
            switch problem {
            case .reported(let reported):
                return reported
            case .mismatch(let keyPath, let type, let fromEnvironment):
                var message = "must be " + Self.expectation(type)
                if fromEnvironment {
                    let name = ConfigurationReader.environmentName(keyPath)
                    message += ", got \"\(environment[name] ?? "")\" from \(name)"
                }
                return ConfigurationProblem(keyPath, message)
            }
        }
    }

    static func expectation(_ type: ConfigType) -> String {
        switch type {
        case .int: "a whole number"
        case .bool: "true or false"
        case .stringArray: "a list of strings"
        case .string: "a string"
        default: "a \(type.rawValue)"
        }
    }
}

/// The configuration file's values by key path, each with the type JSON gave it: `true` is a boolean and never the
/// number 1, `1.5` is not a whole number. A value no reader method asks for (`null`, a list of numbers) is kept as
/// bytes, so that whatever type is asked for, it is reported as not that type.
private struct FileValues {
    var values: [AbsoluteConfigKey: ConfigValue] = [:]

    init(_ file: [String: Any]) {
        flatten(file, prefix: [])
    }

    var keyPaths: [String] { values.keys.map { $0.components.joined(separator: ".") } }

    func holds(_ keyPath: String) -> Bool {
        values.keys.contains { key in
            let path = key.components.joined(separator: ".")
            return path == keyPath || path.hasPrefix(keyPath + ".")
        }
    }

    private mutating func flatten(_ object: [String: Any], prefix: [String]) {
        for (key, value) in object {
            let path = prefix + [key]
            if let child = value as? [String: Any], !child.isEmpty {
                flatten(child, prefix: path)
            } else {
                values[AbsoluteConfigKey(path)] = ConfigValue(Self.content(value), isSecret: false)
            }
        }
    }

    private static func content(_ value: Any) -> ConfigContent {
        switch value {
        case let string as String: return .string(string)
        case let number as NSNumber where ConfigurationReader.isBoolean(number): return .bool(number.boolValue)
        case let number as NSNumber where number.doubleValue == Double(number.intValue): return .int(number.intValue)
        case let number as NSNumber: return .double(number.doubleValue)
        case let list as [Any] where list.allSatisfy({ $0 is String }): return .stringArray(list.compactMap { $0 as? String })
        default: return .bytes([])
        }
    }
}
