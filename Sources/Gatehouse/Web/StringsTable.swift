import Foundation

/// All user-facing text of one language, by key (`Strings/<language>.json`), with the deployment's names filled in:
/// `{chat}` is the chat product's name and `{gateway}` the gateway's. Every table names its own language (`lang`), its
/// writing direction (`dir`), its name in itself (`language_name`) and the locale its dates are written in
/// (`locale`).
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

    /// The text for `key` with `{name}`-style arguments filled in; a missing key shows itself rather than nothing. In
    /// a right-to-left language each value is isolated (Unicode's bidirectional algorithm, UAX #9): a phone number,
    /// an app's Latin name or a host keeps its own order instead of being reordered with the sentence around it.
    /// The string `key` with its `{name}`s filled in from `arguments`, in one pass over the string alone: what a value
    /// holds (a display name reading `{target}`) is never read as a placeholder. In a right-to-left language every
    /// value is isolated (`isolated`) unless it already is (a member's name always is: `Room.name(of:)`).
    public func text(_ key: String, _ arguments: [String: String] = [:]) -> String {
        let template = values[key] ?? key
        guard !arguments.isEmpty, template.contains("{") else { return template }
        let isolates = direction == "rtl"
        var text = ""
        var rest = template[...]
        while let open = rest.firstIndex(of: "{") {
            text += rest[..<open]
            let afterOpen = rest.index(after: open)
            guard let close = rest[afterOpen...].firstIndex(of: "}"), let value = arguments[String(rest[afterOpen..<close])] else {
                text += "{"
                rest = rest[afterOpen...]
                continue
            }
            text += isolates && !Self.isIsolated(value) ? Self.isolated(value) : value
            rest = rest[rest.index(after: close)...]
        }
        return text + rest
    }

    static func isIsolated(_ value: String) -> Bool {
        value.unicodeScalars.first.map { (0x2066...0x2068).contains($0.value) } == true && value.unicodeScalars.last?.value == 0x2069
    }

    /// `value` between isolates: left to right (LRI) unless it holds right-to-left letters, which choose for
    /// themselves (FSI). A value of digits and signs only (`+971 4 123 4567`) has no direction of its own, and
    /// browsers would otherwise give it the sentence's.
    static func isolated(_ value: String) -> String {
        let rightToLeft = value.unicodeScalars.contains { (0x0590...0x08FF).contains($0.value) || (0xFB1D...0xFEFF).contains($0.value) }
        return (rightToLeft ? "\u{2068}" : "\u{2066}") + value + "\u{2069}"
    }

    public subscript(key: String) -> String { text(key) }

    /// `rtl` for a language written right to left, else `ltr`.
    public var direction: String { values["dir"] == "rtl" ? "rtl" : "ltr" }

    /// Dates and times as this language's readers write them.
    public var locale: Locale { Locale(identifier: values["locale"] ?? "en_GB") }
}

public enum StringsTableError: Error, CustomStringConvertible {
    case notAStringMap(String)
    case noTable(language: String, directory: String)
    public var description: String {
        switch self {
        case .notAStringMap(let path): "\(path) must be a JSON object of strings"
        case .noTable(let language, let directory): "the default language \(language) has no strings table (\(directory)/\(language).json)"
        }
    }
}
