import Foundation

/// Reads typed values by key path from a parsed file and the environment, collecting problems instead of stopping.
///
/// A key path `oidc.client_id` is `{"oidc": {"client_id": …}}` in the file and `GATEHOUSE_OIDC_CLIENT_ID` in the
/// environment; the environment wins. Secrets are read only from the environment or from the file a
/// `GATEHOUSE_…_FILE` variable names.
struct ConfigurationReader {
    private let file: [String: Any]
    private let environment: [String: String]
    private let readSecretFile: (String) throws -> String
    private(set) var problems: [ConfigurationProblem] = []
    private(set) var consumed: Set<String> = []

    init(file: [String: Any], environment: [String: String], readSecretFile: @escaping (String) throws -> String) {
        self.file = file
        self.environment = environment
        self.readSecretFile = readSecretFile
    }

    static func environmentName(_ keyPath: String) -> String {
        "GATEHOUSE_" + keyPath.uppercased().replacingOccurrences(of: ".", with: "_")
    }

    mutating func report(_ keyPath: String, _ message: String) {
        problems.append(ConfigurationProblem(keyPath, message))
    }

    /// The raw file value at `keyPath`, marking it as understood.
    mutating func fileValue(_ keyPath: String) -> Any? {
        consumed.insert(keyPath)
        var node: Any? = file
        for component in keyPath.split(separator: ".") {
            node = (node as? [String: Any])?[String(component)]
        }
        return node
    }

    mutating func string(_ keyPath: String, default defaultValue: String) -> String {
        optionalString(keyPath) ?? defaultValue
    }

    mutating func optionalString(_ keyPath: String) -> String? {
        let fromFile = fileValue(keyPath)
        if let value = environment[Self.environmentName(keyPath)] { return value }
        guard let fromFile else { return nil }
        if let string = fromFile as? String { return string }
        report(keyPath, "must be a string")
        return nil
    }

    mutating func int(_ keyPath: String, default defaultValue: Int, range: ClosedRange<Int>) -> Int {
        let fromFile = fileValue(keyPath)
        var value: Int?
        if let text = environment[Self.environmentName(keyPath)] {
            value = Int(text.trimmingCharacters(in: .whitespaces))
            if value == nil { report(keyPath, "must be a whole number, got \"\(text)\" from \(Self.environmentName(keyPath))") }
        } else if let fromFile {
            if let number = fromFile as? NSNumber, !Self.isBoolean(fromFile), number.doubleValue == Double(number.intValue) {
                value = number.intValue
            } else {
                report(keyPath, "must be a whole number")
            }
        }
        guard let value else { return defaultValue }
        guard range.contains(value) else {
            report(keyPath, "must be between \(range.lowerBound) and \(range.upperBound), got \(value)")
            return defaultValue
        }
        return value
    }

    mutating func optionalBool(_ keyPath: String) -> Bool? {
        let fromFile = fileValue(keyPath)
        if let text = environment[Self.environmentName(keyPath)] {
            switch text.lowercased() {
            case "1", "true", "yes", "on": return true
            case "0", "false", "no", "off": return false
            default:
                report(keyPath, "must be true or false, got \"\(text)\" from \(Self.environmentName(keyPath))")
                return nil
            }
        }
        guard let fromFile else { return nil }
        if Self.isBoolean(fromFile), let bool = fromFile as? Bool { return bool }
        report(keyPath, "must be true or false")
        return nil
    }

    /// Whether a value from the JSON file is `true` or `false`. (On Linux `1 is Bool` holds too: JSON's numbers and
    /// booleans both arrive as `NSNumber`, told apart only by their type encoding.)
    static func isBoolean(_ value: Any) -> Bool {
        guard let number = value as? NSNumber else { return false }
        return String(cString: number.objCType) == "c"
    }

    mutating func bool(_ keyPath: String, default defaultValue: Bool) -> Bool {
        optionalBool(keyPath) ?? defaultValue
    }

    /// A list: a JSON array of strings in the file, or a comma- or space-separated environment value.
    mutating func stringList(_ keyPath: String, default defaultValue: [String]) -> [String] {
        let fromFile = fileValue(keyPath)
        if let text = environment[Self.environmentName(keyPath)] {
            return text.split(whereSeparator: { $0 == "," || $0 == " " }).map(String.init)
        }
        guard let fromFile else { return defaultValue }
        guard let list = fromFile as? [Any], list.allSatisfy({ $0 is String }) else {
            report(keyPath, "must be a list of strings")
            return defaultValue
        }
        return list.compactMap { $0 as? String }
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
    mutating func secret(_ keyPath: String) -> String? {
        if fileValue(keyPath) != nil {
            report(
                keyPath,
                "is a secret and is not read from the configuration file; set \(Self.environmentName(keyPath)) or \(Self.environmentName(keyPath))_FILE"
            )
        }
        let name = Self.environmentName(keyPath)
        if let value = environment[name], !value.isEmpty { return value }
        guard let path = environment[name + "_FILE"] else { return nil }
        do {
            let value = try readSecretFile(path).trimmingCharacters(in: .whitespacesAndNewlines)
            if value.isEmpty { report(keyPath, "the file named by \(name)_FILE is empty") }
            return value.isEmpty ? nil : value
        } catch {
            report(keyPath, "cannot read the file named by \(name)_FILE")
            return nil
        }
    }

    /// Key paths present in the file that nothing read: almost always a typo.
    func unknownFileKeys() -> [String] {
        var unknown: [String] = []
        func walk(_ node: [String: Any], prefix: String) {
            for (key, value) in node {
                let path = prefix.isEmpty ? key : "\(prefix).\(key)"
                if consumed.contains(path) { continue }
                if let child = value as? [String: Any], consumed.contains(where: { $0.hasPrefix(path + ".") }) {
                    walk(child, prefix: path)
                } else {
                    unknown.append(path)
                }
            }
        }
        walk(file, prefix: "")
        return unknown.sorted()
    }
}
