import Foundation
import GatehouseCore

/// The console's form for one app: its fields as the operator typed them, and the app entry they make (the file's
/// `apps[]` shape). The common settings have fields of their own; the rules are a JSON list, and every other key of
/// the file's (`client_cookies`, `rewrite`, `identity_headers`…) goes in one JSON object, `settings`.
struct CatalogForm {
    static let textFields = ["slug", "name", "description", "icon", "upstream", "mount", "minimum_level"]
    static let listFields = ["required_roles", "required_groups"]
    /// The fields of the form, in the page's order (each is an element's id with the `app-` prefix).
    static let fields = textFields + listFields + ["rules", "settings"]

    var values: [String: String]
    var enabled: Bool
    /// The stored version the form was read at (`nil`: a new app).
    var version: Int?

    init(values: [String: String] = ["mount": "path", "minimum_level": "sso"], enabled: Bool = true, version: Int? = nil) {
        self.values = values
        self.enabled = enabled
        self.version = version
    }

    /// What a posted form holds.
    init(posted form: [String: String]) {
        var values: [String: String] = [:]
        for field in Self.fields { values[field] = form[field]?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "" }
        self.init(values: values, enabled: form["enabled"] == "on", version: form["version"].flatMap { Int($0) })
    }

    /// A stored entry in the form's fields (the rules and the other settings as indented JSON).
    init(entry: [String: Any], enabled: Bool, version: Int) {
        var values: [String: String] = [:]
        var rest = entry
        for field in Self.textFields { values[field] = rest.removeValue(forKey: field).map { "\($0)" } ?? "" }
        for field in Self.listFields { values[field] = (rest.removeValue(forKey: field) as? [String])?.joined(separator: ", ") ?? "" }
        values["rules"] = rest.removeValue(forKey: "rules").map(Self.json) ?? ""
        values["settings"] = rest.isEmpty ? "" : Self.json(rest)
        self.init(values: values, enabled: enabled, version: version)
    }

    var slug: String { values["slug"] ?? "" }

    /// The entry the fields make, or the fields that cannot make one (JSON that does not parse, a setting that has a
    /// field of its own).
    func entry() -> Result<[String: Any], ConfigurationError> {
        var entry: [String: Any] = [:]
        var problems: [ConfigurationProblem] = []
        if let settings = values["settings"], !settings.isEmpty {
            if let object = Self.parse(settings) as? [String: Any] {
                entry = object
                for key in object.keys.sorted() where Self.fields.contains(key) {
                    problems.append(ConfigurationProblem("settings", "\(key) has a field of its own"))
                }
            } else {
                problems.append(ConfigurationProblem("settings", "must be a JSON object of the file's other app keys, like {\"rewrite\": \"html\"}"))
            }
        }
        for field in Self.textFields {
            if let value = values[field], !value.isEmpty { entry[field] = value }
        }
        for field in Self.listFields {
            let items = (values[field] ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            if !items.isEmpty { entry[field] = items }
        }
        if let rules = values["rules"], !rules.isEmpty {
            if let list = Self.parse(rules) as? [Any] {
                entry["rules"] = list
            } else {
                problems.append(ConfigurationProblem("rules", "must be a JSON list of rules, like [{\"paths\": [\"/admin/*\"], \"require\": {\"roles\": [\"admin\"]}}]"))
            }
        }
        if (values["name"] ?? "").isEmpty { problems.append(ConfigurationProblem("name", "is required")) }
        if (values["upstream"] ?? "").isEmpty { problems.append(ConfigurationProblem("upstream", "is required")) }
        return problems.isEmpty ? .success(entry) : .failure(ConfigurationError(problems: problems))
    }

    /// The form field a problem's key path belongs to (`rules[0].paths` → `rules`; keys without a field of their own →
    /// `settings`).
    static func field(of keyPath: String) -> String {
        let first = String(keyPath.prefix { $0 != "." && $0 != "[" })
        return fields.contains(first) ? first : "settings"
    }

    static func parse(_ text: String) -> Any? {
        try? JSONSerialization.jsonObject(with: Data(text.utf8))
    }

    static func json(_ value: Any) -> String {
        let options: JSONSerialization.WritingOptions = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        guard JSONSerialization.isValidJSONObject(value), let data = try? JSONSerialization.data(withJSONObject: value, options: options) else {
            return "\(value)"
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// An entry as stored: compact, keys sorted.
    static func text(_ entry: [String: Any]) -> String {
        let data = (try? JSONSerialization.data(withJSONObject: entry, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }
}
