import Foundation
import Testing

@testable import Gatehouse

/// Every template, in every language, renders absence as absence: with each value it names missing (left out, or an
/// `Optional` boxed in `Any` as a controller might hand it over) and with each present, no page carries the text
/// `nil`, an `Optional(…)`, a Mustache tag left over, or a notice box with nothing in it.
@Suite struct TemplateRenderingTests {
    static let folder = LiveGateway.root + "/Templates"

    static let templates: [String] =
        (try? FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".mustache") }.map {
            String($0.dropLast(".mustache".count))
        }.sorted()) ?? []

    /// The values a template names itself (`{{name}}`, `{{#name}}`, `{{^name}}`, `{{{name}}}`), leaving out the strings
    /// table, the assets and what the renderer adds to every page.
    static func names(in template: String) throws -> [String] {
        let text = try String(contentsOfFile: "\(folder)/\(template).mustache", encoding: .utf8)
        let found = text.matches(of: /\{\{\{?[#^&\/]?\s*([A-Za-z_][A-Za-z0-9_]*)(\.[A-Za-z0-9_.]+)?\s*\}?\}\}/).map { String($0.1) }
        let common: Set = ["s", "assets", "title", "lang", "dir", "gatewayName", "developmentMode", "sessionWatch"]
        return Array(Set(found).subtracting(common)).sorted()
    }

    /// What a member must never read on a page.
    static func strays(in html: String) -> [String] {
        var found: [String] = []
        if html.contains(/\bnil\b/) { found.append("the text nil") }
        if html.contains("Optional(") { found.append("Optional(…)") }
        if html.contains(/\{\{[#^\/&>!{]?\s*[A-Za-z_.]/) { found.append("a Mustache tag") }
        for match in html.matches(of: /<(p|div|span)\b[^>]*class="[^"]*\bnotice\b[^"]*"[^>]*>\s*<\/(p|div|span)>/) {
            found.append("an empty notice: \(match.0)")
        }
        return found
    }

    static func renderer() async throws -> PageRenderer {
        try await PageRenderer.load(configuration: LiveGateway.developmentConfiguration(port: 8080))
    }

    static func render(_ renderer: PageRenderer, _ template: String, language: String, _ values: [String: Any]) throws -> String {
        try RequestLanguage.$current.withValue(RequestLanguage(language)) {
            try renderer.html(template, title: "Title", values)
        }
    }

    @Test func everyTemplateIsFound() {
        #expect(Self.templates.count >= 39)
        #expect(Self.templates.contains("upgrade-top") && Self.templates.contains("account"))
    }

    @Test(arguments: templates)
    func absentValuesRenderAsAbsence(template: String) async throws {
        let names = try Self.names(in: template)
        let renderer = try await Self.renderer()
        for language in renderer.languages.offered {
            // Nothing given, and every value given as a missing `Optional` (of a string, a list, a dictionary).
            let empty = try Self.render(renderer, template, language: language, [:])
            #expect(Self.strays(in: empty) == [], "\(template) in \(language) with nothing given")
            var boxed: [String: Any] = [:]
            for (index, name) in names.enumerated() {
                switch index % 3 {
                case 0: boxed[name] = String?.none as Any
                case 1: boxed[name] = [String]?.none as Any
                default: boxed[name] = [String: Any]?.none as Any
                }
            }
            let missing = try Self.render(renderer, template, language: language, boxed)
            #expect(Self.strays(in: missing) == [], "\(template) in \(language) with every value a missing Optional")
            #expect(missing == empty, "\(template) in \(language): a missing Optional renders unlike a value left out")
        }
    }

    @Test(arguments: templates)
    func eachPresentValueRendersAsItself(template: String) async throws {
        let names = try Self.names(in: template)
        let renderer = try await Self.renderer()
        for language in renderer.languages.offered {
            for name in names {
                // A value present, boxed as a controller might hand it over.
                let html = try Self.render(renderer, template, language: language, [name: Optional("Present \(name)") as Any])
                #expect(Self.strays(in: html) == [], "\(template) in \(language) with \(name) present")
            }
            let all = try Self.render(renderer, template, language: language, Dictionary(uniqueKeysWithValues: names.map { ($0, "Present \($0)") }))
            #expect(Self.strays(in: all) == [], "\(template) in \(language) with every value present")
        }
    }

    @Test func aBoxedValueIsUnwrappedAtEveryDepth() throws {
        let values: [String: Any] = [
            "a": Optional("text") as Any, "b": String?.none as Any,
            "list": [Optional("one") as Any, String?.none as Any, ["inner": Int?.none as Any, "kept": Optional(1) as Any]],
        ]
        let present = TemplateValues.present(values)
        #expect(present["a"] as? String == "text")
        #expect(present["b"] == nil && present.keys.count == 2)
        let list = try #require(present["list"] as? [Any])
        #expect(list.count == 2)
        #expect(list.first as? String == "one")
        let inner = try #require(list.last as? [String: Any])
        #expect(inner.keys.sorted() == ["kept"] && inner["kept"] as? Int == 1)
    }
}
