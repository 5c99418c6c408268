import Foundation

/// `application/x-www-form-urlencoded` and query strings, encoding everything outside the unreserved set.
public enum FormEncoding {
    /// RFC 3986 unreserved: ASCII letters and digits, `-._~`.
    static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            true
        default: false
        }
    }

    /// Every UTF-8 byte outside the unreserved set as `%XX` (upper-case hex, as Foundation writes it).
    public static func escape(_ value: String) -> String {
        guard !value.utf8.allSatisfy(isUnreserved) else { return value }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(value.utf8.count * 3)
        appendEscaped(value, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `escape(value)`, appended to `bytes` (markup being put together as bytes).
    public static func appendEscaped(_ value: some StringProtocol, to bytes: inout [UInt8]) {
        for byte in value.utf8 {
            if isUnreserved(byte) {
                bytes.append(byte)
            } else {
                bytes.append(UInt8(ascii: "%"))
                bytes.appendHex(byte, uppercase: true)
            }
        }
    }

    public static func encode(_ pairs: [(String, String)]) -> String {
        var text = ""
        append(pairs, to: &text)
        return text
    }

    /// Appends `pairs` to a URL that may already carry a query.
    public static func url(_ base: String, adding pairs: [(String, String)]) -> String {
        var text = base
        text += base.utf8.contains(UInt8(ascii: "?")) ? "&" : "?"
        append(pairs, to: &text)
        return text
    }

    /// `name=value&…`, appended piece by piece (links with a way back are made for every page).
    static func append(_ pairs: [(String, String)], to text: inout String) {
        for (index, (name, value)) in pairs.enumerated() {
            if index > 0 { text += "&" }
            text += escape(name)
            text += "="
            text += escape(value)
        }
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
