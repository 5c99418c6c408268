import Foundation
import GatehouseCore
import NIOConcurrencyHelpers

/// The strings tables of every language in `Strings/`, and how a request's language is chosen: the member's choice
/// (kept in the session), else the browser's `Accept-Language`, else the configured default.
public struct Languages: Sendable {
    let tables: [String: StringsTable]
    public let defaultLanguage: String
    /// The languages a member can choose, the default first, then by code.
    public let offered: [String]

    public init(tables: [String: StringsTable], defaultLanguage: String) {
        self.tables = tables
        self.defaultLanguage = defaultLanguage
        offered = [defaultLanguage] + tables.keys.filter { $0 != defaultLanguage }.sorted()
    }

    /// Every `<language>.json` in `directory`; the default language must be among them.
    public static func load(directory: String, defaultLanguage: String, brand: BrandConfiguration) throws -> Languages {
        let files = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".json") }
        var tables: [String: StringsTable] = [:]
        for file in files {
            let language = String(file.dropLast(".json".count))
            tables[language] = try StringsTable.load(directory: directory, language: language, brand: brand)
        }
        guard tables[defaultLanguage] != nil else { throw StringsTableError.noTable(language: defaultLanguage, directory: directory) }
        return Languages(tables: tables, defaultLanguage: defaultLanguage)
    }

    /// The table of the request being handled (`RequestLanguage.current`), else the default language's.
    public var strings: StringsTable { table(RequestLanguage.current?.code) }

    /// The language the request being handled is in.
    public var current: String { RequestLanguage.current?.code ?? defaultLanguage }

    public func table(_ language: String?) -> StringsTable {
        language.flatMap { tables[$0] } ?? tables[defaultLanguage]!
    }

    /// The language for a browser that says `acceptLanguage`: its most preferred one Gatehouse has, by primary
    /// subtag (`de-AT` reads German); the default when it names none.
    public func negotiated(acceptLanguage: String?) -> String {
        AcceptLanguage(acceptLanguage).ranges.lazy.compactMap { range in
            range == "*" ? nil : String(range.prefix { $0 != "-" })
        }.first { tables[$0] != nil } ?? defaultLanguage
    }

    /// The account menu's languages, each named in itself and marked as its own language, the request's current.
    public var choices: [[String: Any]] {
        let current = current
        return offered.map { code in
            let table = table(code)
            return ["code": code, "name": table["language_name"], "dir": table.direction, "current": code == current]
        }
    }

    /// The member's own choice, if it is one Gatehouse still has.
    public func chosen(in session: Session) -> String? {
        session.frame?.language.flatMap { tables[$0] != nil ? $0 : nil }
    }

    /// The language of a request from `session` with `acceptLanguage`: the member's choice, else the browser's.
    public func language(session: Session?, acceptLanguage: String?) -> String {
        session.flatMap(chosen(in:)) ?? negotiated(acceptLanguage: acceptLanguage)
    }
}

/// The language of one request's pages, bound for the request's task (`LanguageMiddleware`) so that everything that
/// renders reads it without being handed it: the browser's `Accept-Language` when the request arrives, the member's
/// own choice once its session is known (`settle`). The data plane, which has no task, binds one around what it
/// renders.
public final class RequestLanguage: Sendable {
    @TaskLocal public static var current: RequestLanguage?

    private enum State {
        case settled(String)
        /// The browser's header, read when something first asks (most requests render nothing).
        case asked(acceptLanguage: String?, languages: Languages)
    }

    /// The language, and whether the pages are a signed-in member's (which warn before the session ends).
    private let value: NIOLockedValueBox<(state: State, signedIn: Bool)>

    public init(_ code: String) {
        value = NIOLockedValueBox((.settled(code), false))
    }

    /// The language `acceptLanguage` asks for among `languages`, negotiated on first read.
    public init(acceptLanguage: String?, languages: Languages) {
        value = NIOLockedValueBox((.asked(acceptLanguage: acceptLanguage, languages: languages), false))
    }

    public var code: String {
        value.withLockedValue { value in
            switch value.state {
            case .settled(let code):
                return code
            case .asked(let acceptLanguage, let languages):
                let code = languages.negotiated(acceptLanguage: acceptLanguage)
                value.state = .settled(code)
                return code
            }
        }
    }

    /// Whether the request's pages are a signed-in member's (`settle`).
    public var isSignedIn: Bool { value.withLockedValue { $0.signedIn } }

    /// The member's choice, once the session is known, replaces the browser's; the pages are the member's.
    public static func settle(_ session: Session, languages: Languages) {
        let chosen = languages.chosen(in: session)
        current?.value.withLockedValue { value in
            if let chosen { value.state = .settled(chosen) }
            value.signedIn = true
        }
    }
}

/// What a browser's `Accept-Language` asks for: its language ranges, lowercased, most preferred first (by `q`, then
/// by order), without those it refuses (`q=0`).
struct AcceptLanguage {
    let ranges: [String]

    init(_ value: String?) {
        guard let value, value.utf8.count <= 1024 else {
            ranges = []
            return
        }
        let weighted = value.lowercased().split(separator: ",").enumerated().compactMap { index, part -> (String, Double, Int)? in
            let pieces = part.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
            guard let range = pieces.first, !range.isEmpty, range.allSatisfy({ $0.isASCII && ($0.isLetter || $0 == "-" || $0 == "*") }) else {
                return nil
            }
            var quality = 1.0
            for piece in pieces.dropFirst() {
                let parameter = piece.replacingOccurrences(of: " ", with: "")
                if parameter.hasPrefix("q=") { quality = Double(parameter.dropFirst(2)) ?? 0 }
            }
            return quality > 0 && quality <= 1 ? (range, quality, index) : nil
        }
        ranges = weighted.sorted { $0.1 != $1.1 ? $0.1 > $1.1 : $0.2 < $1.2 }.map(\.0)
    }
}
