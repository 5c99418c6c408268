import Foundation
import GatehouseStorage

/// The console's apps (`StoredApp`) read as the file's are (`AppCatalogReader`) and checked with the rest of the
/// configuration (`validate`, as `check-config` does): the same rules, wherever an app was written.
enum StoredAppsReader {
    /// `configuration` (the file's apps) with the enabled stored apps that pass beside it, each in turn; those that
    /// do not (a slug the file took since, an upstream the allowlist no longer holds) are set aside with their
    /// problems, by slug, and the rest is served.
    static func merge(_ stored: [StoredApp], into configuration: GatehouseConfiguration) -> (
        configuration: GatehouseConfiguration, setAside: [String: [ConfigurationProblem]]
    ) {
        var merged = configuration
        var setAside: [String: [ConfigurationProblem]] = [:]
        let existing = configuration.validate()
        for app in stored {
            guard app.enabled else {
                if !merged.apps.contains(where: { $0.slug == app.slug }) {
                    let entry = try? JSONSerialization.jsonObject(with: Data(app.entry.utf8)) as? [String: Any]
                    merged.turnedOffApps[app.slug] = (entry?["name"] as? String).flatMap { $0.isEmpty ? nil : $0 } ?? app.slug
                }
                continue
            }
            switch read(app.entry, beside: merged, existing: existing) {
            case .success(let read): merged.apps.append(read)
            case .failure(let error): setAside[app.slug] = error.problems
            }
        }
        return (merged, setAside)
    }

    /// `entry` (JSON text of the file's `apps[]` shape) read and checked beside `configuration`'s apps; its problems,
    /// each with a key path within the app (`upstream`, `rules[0].paths`), or beyond it where the rest of the
    /// configuration is concerned.
    static func read(_ entry: String, beside configuration: GatehouseConfiguration, existing: [ConfigurationProblem]? = nil) -> Result<
        AppConfiguration, ConfigurationError
    > {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(entry.utf8))) as? [String: Any] else {
            return .failure(ConfigurationError(problems: [ConfigurationProblem("(entry)", "must be a JSON object")]))
        }
        return read(object, beside: configuration, existing: existing)
    }

    static func read(_ object: [String: Any], beside configuration: GatehouseConfiguration, existing: [ConfigurationProblem]? = nil) -> Result<
        AppConfiguration, ConfigurationError
    > {
        var reader = ConfigurationReader(file: ["apps": [object]], environment: [:]) { try String(contentsOfFile: $0, encoding: .utf8) }
        let apps = AppCatalogReader.read(&reader)
        var problems = relative(reader.problems, index: 0)
        guard let app = apps.first, problems.isEmpty else { return .failure(ConfigurationError(problems: problems)) }
        if configuration.apps.contains(where: { $0.slug == app.slug }) {
            return .failure(ConfigurationError(problems: [ConfigurationProblem("slug", "\"\(app.slug)\" is taken by an app of the configuration file or of the console")]))
        }
        var candidate = configuration
        candidate.apps.append(app)
        let before = existing ?? configuration.validate()
        problems = relative(candidate.validate().filter { !before.contains($0) }, index: configuration.apps.count)
        return problems.isEmpty ? .success(app) : .failure(ConfigurationError(problems: problems))
    }

    /// `apps[index].upstream` → `upstream`; other key paths as they are.
    static func relative(_ problems: [ConfigurationProblem], index: Int) -> [ConfigurationProblem] {
        let prefix = "apps[\(index)]"
        return problems.map { problem in
            if problem.keyPath == prefix { return ConfigurationProblem("(entry)", problem.message) }
            guard problem.keyPath.hasPrefix(prefix + ".") else { return problem }
            return ConfigurationProblem(String(problem.keyPath.dropFirst(prefix.count + 1)), problem.message)
        }
    }
}
