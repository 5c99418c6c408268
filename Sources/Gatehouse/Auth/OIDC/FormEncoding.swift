import Foundation

/// `application/x-www-form-urlencoded` and query strings, encoding everything outside the unreserved set.
public enum FormEncoding {
    static let unreserved: CharacterSet = {
        var set = CharacterSet.alphanumerics.intersection(CharacterSet(charactersIn: Unicode.Scalar(0)..<Unicode.Scalar(128)))
        set.insert(charactersIn: "-._~")
        return set
    }()

    public static func escape(_ value: String) -> String {
        value.addingPercentEncoding(withAllowedCharacters: unreserved) ?? ""
    }

    public static func encode(_ pairs: [(String, String)]) -> String {
        pairs.map { "\(escape($0.0))=\(escape($0.1))" }.joined(separator: "&")
    }

    /// Appends `pairs` to a URL that may already carry a query.
    public static func url(_ base: String, adding pairs: [(String, String)]) -> String {
        base + (base.contains("?") ? "&" : "?") + encode(pairs)
    }

    /// Parses a query string or form body; `+` is a space, later duplicates are ignored.
    public static func decode(_ text: String) -> [String: String] {
        var result: [String: String] = [:]
        for (key, value) in pairs(text) where result[key] == nil { result[key] = value }
        return result
    }

    /// Every name and value of a query string or form body, in order, duplicates included.
    public static func pairs(_ text: String) -> [(String, String)] {
        text.split(separator: "&").map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = (parts[0].replacingOccurrences(of: "+", with: " ")).removingPercentEncoding ?? ""
            let value = parts.count > 1 ? (parts[1].replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? "") : ""
            return (key, value)
        }
    }
}
