import Foundation
import GatehouseCore

/// Reads `apps[].rules` and `apps[].case_insensitive_paths`: every rule's patterns, methods, requirements and action
/// checked, each problem with its key path.
enum PathRulesReader {
    static func read(_ app: [String: Any], path: String, reader: inout ConfigurationReader) -> PathRules {
        let caseInsensitive = AppCatalogReader.flag(app, "case_insensitive_paths", path: path, reader: &reader) ?? false
        guard let value = app["rules"] else { return PathRules(caseInsensitive: caseInsensitive) }
        guard let list = value as? [Any] else {
            reader.report("\(path).rules", "must be a list of rules")
            return PathRules(caseInsensitive: caseInsensitive)
        }
        let rules = list.enumerated().compactMap { index, element in
            rule(element, path: "\(path).rules[\(index)]", caseInsensitive: caseInsensitive, reader: &reader)
        }
        return PathRules(rules, caseInsensitive: caseInsensitive)
    }

    static let requirementKeys: Set = ["level", "roles", "groups", "claims", "networks", "auth_age_seconds", "acr", "pin_age_seconds"]

    /// A number of seconds, from 1 to a day: longer than the longest session is no requirement at all.
    static func seconds(_ value: Any?, path: String, reader: inout ConfigurationReader) -> Int? {
        guard let value else { return nil }
        guard !ConfigurationReader.isBoolean(value), let seconds = value as? Int, (1...86_400).contains(seconds) else {
            reader.report(path, "must be a number of seconds from 1 to 86400")
            return nil
        }
        return seconds
    }

    static let methods: Set = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]

    static func rule(_ element: Any, path: String, caseInsensitive: Bool, reader: inout ConfigurationReader) -> PathRules.Rule? {
        guard let object = element as? [String: Any] else {
            reader.report(path, "must be an object with paths, and methods, require or action")
            return nil
        }
        for key in object.keys.sorted() where !["paths", "methods", "require", "action"].contains(key) {
            reader.report("\(path).\(key)", "unknown key")
        }
        guard let patterns = object["paths"] as? [String], !patterns.isEmpty else {
            reader.report("\(path).paths", "must be a list of paths such as \"/admin/*\"")
            return nil
        }
        var normalized: [String] = []
        for pattern in patterns {
            if let checked = PathRules.normalizePattern(pattern, caseInsensitive: caseInsensitive) {
                normalized.append(checked)
            } else {
                reader.report("\(path).paths", "\"\(pattern)\" must start with / and use * only as a last segment (\"/admin/*\")")
            }
        }
        let methods = (object["methods"] as? [String]) ?? []
        if object["methods"] != nil && (object["methods"] as? [String]) == nil {
            reader.report("\(path).methods", "must be a list of HTTP methods")
        }
        for method in methods where !Self.methods.contains(method.uppercased()) {
            reader.report("\(path).methods", "\"\(method)\" is not one of \(Self.methods.sorted().joined(separator: ", "))")
        }
        let actionText = (object["action"] as? String) ?? PathRules.Rule.Action.allow.rawValue
        let action = PathRules.Rule.Action(rawValue: actionText)
        if action == nil { reader.report("\(path).action", "must be allow or deny, got \"\(actionText)\"") }
        let require = requirement(object["require"], path: "\(path).require", reader: &reader)
        if action == .deny && require != PathRules.Requirement() {
            reader.report("\(path).require", "a deny rule refuses everyone on its paths: requirements belong to allow rules")
        }
        return PathRules.Rule(paths: normalized, methods: methods, require: require, action: action ?? .deny)
    }

    static func requirement(_ value: Any?, path: String, reader: inout ConfigurationReader) -> PathRules.Requirement {
        guard let value else { return .init() }
        guard let object = value as? [String: Any] else {
            reader.report(path, "must be an object of level, roles, groups, claims, networks, auth_age_seconds, acr and pin_age_seconds")
            return .init()
        }
        for key in object.keys.sorted() where !Self.requirementKeys.contains(key) {
            reader.report("\(path).\(key)", "unknown key")
        }
        var requirement = PathRules.Requirement()
        if let text = object["level"] {
            if let level = (text as? String).flatMap(AuthLevel.init(rawValue:)), level != .none {
                requirement.level = level
            } else {
                reader.report("\(path).level", "must be sso or registered")
            }
        }
        for key in ["roles", "groups", "acr"] where object[key] != nil {
            guard let names = object[key] as? [String] else {
                reader.report("\(path).\(key)", "must be a list of strings")
                continue
            }
            switch key {
            case "roles": requirement.roles = names
            case "groups": requirement.groups = names
            default: requirement.acr = names
            }
        }
        if let blocks = object["networks"] {
            let texts = blocks as? [String] ?? []
            if texts.isEmpty { reader.report("\(path).networks", "must be a list of address blocks such as \"10.0.0.0/8\"") }
            for text in texts {
                if let network = IPNetwork(text) {
                    requirement.networks.append(network)
                } else {
                    reader.report("\(path).networks", "\"\(text)\" is not an address block such as \"10.0.0.0/8\" or \"2001:db8::/32\"")
                }
            }
        }
        requirement.authAgeSeconds = seconds(object["auth_age_seconds"], path: "\(path).auth_age_seconds", reader: &reader)
        requirement.pinAgeSeconds = seconds(object["pin_age_seconds"], path: "\(path).pin_age_seconds", reader: &reader)
        if let claims = object["claims"] {
            guard let map = claims as? [String: Any] else {
                reader.report("\(path).claims", "must be an object of claim name to accepted values")
                return requirement
            }
            for (claim, accepted) in map.sorted(by: { $0.key < $1.key }) {
                guard PathRules.Requirement.claimNames.contains(claim) else {
                    reader.report("\(path).claims.\(claim)", "must be one of \(PathRules.Requirement.claimNames.sorted().joined(separator: ", "))")
                    continue
                }
                if let one = accepted as? String {
                    requirement.claims[claim] = [one]
                } else if let values = accepted as? [String], !values.isEmpty {
                    requirement.claims[claim] = values
                } else {
                    reader.report("\(path).claims.\(claim)", "must be a value or a list of accepted values")
                }
            }
        }
        return requirement
    }
}
