import Foundation
import GatehouseCore
import Testing

@testable import Gatehouse

/// Every language Gatehouse ships is complete (each key, each placeholder), every key the pages and the code name
/// exists, and a request's language is the member's choice, else the browser's, else the default: in pages, the bar
/// on the data plane, and the failure pages.
@Suite struct LanguagesTests {
    static let folder = LiveGateway.root + "/Strings"

    static func table(_ language: String) throws -> [String: String] {
        let data = try Data(contentsOf: URL(fileURLWithPath: "\(folder)/\(language).json"))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: String], "\(language).json")
    }

    static func placeholders(_ text: String) -> Set<String> {
        Set(text.matches(of: /\{([A-Za-z_]+)\}/).map { String($0.1) })
    }

    static let shipped =
        (try? FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".json") }.map {
            String($0.dropLast(5))
        }.sorted()) ?? []

    @Test func englishGermanAndArabicShip() {
        #expect(Set(Self.shipped).isSuperset(of: ["en", "de", "ar"]))
    }

    @Test(arguments: shipped)
    func everyLanguageHasEveryKeyWithItsPlaceholders(language: String) throws {
        let english = try Self.table("en")
        let table = try Self.table(language)
        #expect(Set(english.keys).subtracting(table.keys).sorted() == [], "missing in \(language).json")
        #expect(Set(table.keys).subtracting(english.keys).sorted() == [], "unknown keys in \(language).json")
        for (key, text) in english {
            guard let translated = table[key] else { continue }
            #expect(Self.placeholders(translated) == Self.placeholders(text), "\(language).json \(key): placeholders differ")
            #expect(!translated.trimmingCharacters(in: .whitespaces).isEmpty, "\(language).json \(key) is empty")
        }
        #expect(table["lang"] == language)
        #expect(["ltr", "rtl"].contains(table["dir"] ?? ""))
        #expect(table["language_name"]?.isEmpty == false)
        #expect(
            Date(timeIntervalSince1970: 0).formatted(Date.FormatStyle(date: .abbreviated).locale(Locale(identifier: table["locale"] ?? ""))).contains(
                "1970"))
    }

    @Test func arabicIsWrittenRightToLeftTheOthersLeftToRight() throws {
        #expect(try Self.table("ar")["dir"] == "rtl")
        #expect(try Self.table("en")["dir"] == "ltr" && Self.table("de")["dir"] == "ltr")
    }

    /// `{{s.key}}` in a template and a literal key the code reads (`strings["key"]`, `.text("key"`) must exist: a
    /// missing one would show its key to members.
    @Test func everyKeyThePagesAndTheCodeNameExists() throws {
        let english = try Self.table("en")
        var named: [(String, String)] = []
        for folder in ["Templates", "Sources/Gatehouse"] {
            let root = LiveGateway.root + "/" + folder
            let files = try #require(FileManager.default.enumerator(atPath: root)).compactMap { $0 as? String }
            for file in files where file.hasSuffix(".mustache") || file.hasSuffix(".swift") {
                let text = try String(contentsOfFile: root + "/" + file, encoding: .utf8)
                named += text.matches(of: /\{\{[#^\/]?s\.([a-z0-9_A-Z]+)\}\}/).map { (file, String($0.1)) }
                named += text.matches(of: /strings(?:\?)?(?:\.text\(|\[)"([a-z0-9_A-Z]+)"/).map { (file, String($0.1)) }
            }
        }
        #expect(named.count > 150)
        #expect(named.filter { english[$0.1] == nil }.map { "\($0.0): \($0.1)" } == [])
    }

    static let languages = Languages(
        tables: [
            "en": StringsTable(values: ["lang": "en"], brand: .init()), "de": StringsTable(values: ["lang": "de"], brand: .init()),
            "ar": StringsTable(values: ["lang": "ar", "dir": "rtl"], brand: .init()),
        ],
        defaultLanguage: "en")

    @Test(arguments: [
        ("de-AT,de;q=0.9,en;q=0.5", "de"), ("fr-CH, fr;q=0.9, ar;q=0.8, en;q=0.1", "ar"), ("AR-eg", "ar"), ("en-US,en", "en"),
        ("fr", "en"), ("*", "en"), ("", "en"), ("de;q=0, ar;q=0.1", "ar"), ("de;q=0", "en"), ("en;q=0.2, de", "de"),
        ("de;q=abc", "en"), ("de;q=2", "en"), ("xx-de", "en"), ("d e", "en"), ("de<script>", "en"), (",,,;q=1,", "en"),
        ("en;q=0.5, ar;q=0.5", "en"), (String(repeating: "fr, ", count: 400) + "de", "en"),
    ])
    func theBrowsersLanguageIsItsMostPreferredOneGatehouseHas(header: String, expected: String) {
        #expect(Self.languages.negotiated(acceptLanguage: header) == expected, "\(header)")
    }

    /// A value is put in once: a display name holding a placeholder (`{target}`, `{name}`) is that text, never filled
    /// in again ("Mallory invited Olive" cannot read "Alice invited Alice"); an unknown or unclosed brace stays as it is.
    @Test(arguments: [
        ("{name} invited {target}", ["name": "{target}", "target": "Olive"], "{target} invited Olive"),
        ("{name} invited {target}", ["name": "Mallory", "target": "{name}"], "Mallory invited {name}"),
        ("{name} and {name}", ["name": "{name}"], "{name} and {name}"),
        ("{unknown} {name", ["name": "x"], "{unknown} {name"),
        ("{{name}}", ["name": "x"], "{x}"),
    ])
    func placeholdersAreFilledOnce(template: String, arguments: [String: String], expected: String) {
        let strings = StringsTable(values: ["lang": "en", "line": template], brand: .init())
        #expect(strings.text("line", arguments) == expected)
    }

    /// Right to left, every value is isolated, once: a member's name already is (`Room.name(of:)`).
    @Test func rightToLeftIsolatesEachValueOnce() {
        let strings = StringsTable(values: ["lang": "ar", "dir": "rtl", "line": "{name} انضم {count}"], brand: .init())
        #expect(strings.text("line", ["name": "\u{2068}\u{202E}Bob\u{2069}", "count": "3"]) == "\u{2068}\u{202E}Bob\u{2069} انضم \u{2066}3\u{2069}")
    }

    @Test func theMembersChoiceWinsOverTheBrowserUnlessGatehouseLacksIt() {
        var session = Session(
            id: "s", identity: MemberIdentity(sub: "a"),
            tokens: TokenSet(idToken: "", accessToken: "", refreshToken: nil, accessTokenExpiresAt: nil), level: .sso, csrfToken: "c",
            createdAt: Date(), lastSeenAt: Date(), expiresAt: Date())
        #expect(Self.languages.language(session: session, acceptLanguage: "de") == "de")
        session.frame = FramePreferences(language: "ar")
        #expect(Self.languages.language(session: session, acceptLanguage: "de") == "ar")
        session.frame = FramePreferences(language: "fr")
        #expect(Self.languages.language(session: session, acceptLanguage: "de") == "de")
        #expect(Self.languages.language(session: nil, acceptLanguage: nil) == "en")
    }
}
