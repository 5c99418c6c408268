import Foundation

/// An app's tile icon on the portal: the configured image (a path on the gateway, such as `/static/icons/wiki.svg`),
/// or a monogram — the configured letters, else the initials of the app's name — on a colour of its own, the same for
/// the app on every page and for every member.
struct AppIcon {
    /// How many colours monograms are given (`.tone-0` … in `gatehouse.css`, each readable with white text).
    static let tones = 8

    let image: String?
    let monogram: String
    let tone: Int

    init(_ app: AppConfiguration) {
        let configured = app.icon?.trimmingCharacters(in: .whitespaces) ?? ""
        image = configured.hasPrefix("/") && !configured.hasPrefix("//") ? configured : nil
        monogram = configured.isEmpty || image != nil ? Self.monogram(app.name) : String(configured.prefix(2))
        tone = Self.tone(of: app.slug)
    }

    /// A colour that stays with a name: a stable hash (Swift's own is seeded per process), FNV-1a over its bytes.
    static func tone(of name: String) -> Int {
        var hash: UInt32 = 2_166_136_261
        for byte in name.utf8 { hash = (hash ^ UInt32(byte)) &* 16_777_619 }
        return Int(hash % UInt32(tones))
    }

    /// The initials of the first two words (`Visit Counter` → `VC`), skipping small words written in lower case
    /// (`Links and Forms` → `LF`), or the first two letters of a single word (`Chats` → `CH`, `Calls` → `CA`: one
    /// letter would give both the same icon).
    static func monogram(_ name: String) -> String {
        let words = name.split(whereSeparator: { !$0.isLetter && !$0.isNumber })
        let capitalized = words.filter { $0.first?.isUppercase == true || $0.first?.isNumber == true }
        let chosen = capitalized.isEmpty ? words : capitalized
        if chosen.count == 1, let word = chosen.first { return String(word.prefix(2)).uppercased() }
        return String(chosen.prefix(2).compactMap(\.first)).uppercased()
    }
}
