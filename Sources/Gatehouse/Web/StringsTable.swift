import Foundation

/// All user-facing text, by key (`Strings/<lang>.json`), with the deployment's names filled in: `{chat}` is the chat
/// product's name and `{gateway}` the gateway's.
public struct StringsTable: Sendable {
    public let values: [String: String]

    public init(values: [String: String], brand: BrandConfiguration) {
        var merged = values
        merged.merge(brand.strings) { _, override in override }
        self.values = merged.mapValues {
            $0.replacingOccurrences(of: "{chat}", with: brand.chatProductName)
                .replacingOccurrences(of: "{gateway}", with: brand.gatewayName)
        }
    }

    public static func load(directory: String, language: String = "en", brand: BrandConfiguration) throws -> StringsTable {
        let path = "\(directory)/\(language).json"
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        guard let values = try JSONSerialization.jsonObject(with: data) as? [String: String] else {
            throw StringsTableError.notAStringMap(path)
        }
        return StringsTable(values: values, brand: brand)
    }

    /// The text for `key` with `{name}`-style arguments filled in; a missing key shows itself rather than nothing.
    public func text(_ key: String, _ arguments: [String: String] = [:]) -> String {
        var text = values[key] ?? key
        for (name, value) in arguments { text = text.replacingOccurrences(of: "{\(name)}", with: value) }
        return text
    }

    public subscript(key: String) -> String { text(key) }
}

public enum StringsTableError: Error, CustomStringConvertible {
    case notAStringMap(String)
    public var description: String {
        switch self {
        case .notAStringMap(let path): "\(path) must be a JSON object of strings"
        }
    }
}
