import Foundation

/// A chat message as markup the gateway's pages may show, from what members write and what other clients send. The
/// markup is always this type's own: every character of the input is text, escaped, except the few tags it writes
/// itself (no attribute but a checked link's), so no input, however a browser would parse it, becomes markup of its
/// own (no script, event handler, style, form, frame, SVG or MathML, no `javascript:` or `data:` link).
///
/// - `sanitized(_:)`: another client's `formatted_body` (Matrix's `org.matrix.custom.html`) through an allowlist.
/// - `formatted(_:)`: what a member typed, in a small Markdown subset, as the `formatted_body` to send (`nil` when
///   it has no formatting, and the plain body says it all).
/// - `plain(_:)`: a plain body, escaped, its links made links.
public enum MessageMarkup {
    /// Tags kept as they are (with no attribute): inline formatting, blocks, lists.
    static let kept: Set<String> = [
        "b", "strong", "i", "em", "u", "s", "del", "strike", "code", "pre", "blockquote", "p", "br", "hr", "ul", "ol", "li", "sub", "sup",
    ]
    static let void: Set<String> = ["br", "hr"]
    /// Tags whose content goes with them: code and styles, other documents, the reply's fallback (`mx-reply`, which the
    /// page shows from the reply's own event), SVG and MathML.
    static let dropped: Set<String> = [
        "script", "style", "template", "iframe", "frame", "frameset", "object", "embed", "applet", "noscript", "noembed", "noframes",
        "textarea", "title", "xmp", "plaintext", "svg", "math", "mx-reply", "head", "select",
    ]
    /// How deep kept tags nest before more are left out (their text kept).
    static let depthLimit = 32

    // MARK: - Another client's HTML

    /// `route`: where a kept link takes the member (the page's own choice, `AppCatalog.messageLink`); the link as
    /// written by default.
    public static func sanitized(_ html: String, route: (String) -> String = { $0 }) -> String {
        var output = ""
        var open: [String] = []
        var index = html.startIndex
        while index < html.endIndex {
            guard html[index] == "<" else {
                let next = html[index...].firstIndex(of: "<") ?? html.endIndex
                output += escaped(decoded(html[index..<next]))
                index = next
                continue
            }
            let rest = html[index...]
            if rest.hasPrefix("<!--") {
                index = rest.range(of: "-->")?.upperBound ?? html.endIndex
                continue
            }
            guard let tag = Tag(rest) else {
                // Not a tag (`<` alone, `< b`, an unclosed one): text.
                output += "&lt;"
                index = html.index(after: index)
                continue
            }
            index = tag.end
            if tag.isDeclaration { continue }
            if dropped.contains(tag.name) {
                if !tag.isClosing && !tag.selfCloses { index = end(of: tag.name, in: html, from: index) }
                continue
            }
            if tag.name == "a" {
                if tag.isClosing {
                    close("a", &open, &output)
                } else if open.count < depthLimit, !open.contains("a"), let href = tag.attribute("href").flatMap(link) {
                    output += #"<a href="\#(escaped(route(href)))" rel="noopener noreferrer nofollow" target="_blank">"#
                    open.append("a")
                }
                continue
            }
            guard kept.contains(tag.name) else { continue }
            if void.contains(tag.name) {
                if !tag.isClosing { output += "<\(tag.name)>" }
            } else if tag.isClosing {
                close(tag.name, &open, &output)
            } else if open.count < depthLimit {
                output += "<\(tag.name)>"
                open.append(tag.name)
            }
        }
        for name in open.reversed() { output += "</\(name)>" }
        return output
    }

    /// Closes `name` and what opened after it; a closing tag of nothing open is left out.
    static func close(_ name: String, _ open: inout [String], _ output: inout String) {
        guard let at = open.lastIndex(of: name) else { return }
        for inner in open[at...].reversed() { output += "</\(inner)>" }
        open.removeSubrange(at...)
    }

    /// Past the closing tag of a dropped element (its own kind nested counted), or the end.
    static func end(of name: String, in html: String, from start: String.Index) -> String.Index {
        var depth = 1
        var index = start
        while let found = html[index...].range(of: "<") {
            index = found.upperBound
            guard let tag = Tag(html[found.lowerBound...]) else { continue }
            index = tag.end
            guard tag.name == name, !tag.selfCloses else { continue }
            depth += tag.isClosing ? -1 : 1
            if depth == 0 { return index }
        }
        return html.endIndex
    }

    /// A link's address if it is one a member may follow: `http`, `https` or `mailto`, with no space or control
    /// character in it (browsers ignore some inside a scheme: `java\tscript:`).
    public static func link(_ raw: String) -> String? {
        let address = decoded(Substring(raw)).trimmingCharacters(in: .whitespacesAndNewlines)
        guard address.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value != 0x7F && !(0x80...0x9F).contains($0.value) }),
            address.count <= 2048, let colon = address.firstIndex(of: ":")
        else { return nil }
        switch address[..<colon].lowercased() {
        case "http", "https": return address[address.index(after: colon)...].hasPrefix("//") ? address : nil
        case "mailto": return address.count > 7 ? address : nil
        default: return nil
        }
    }

    // MARK: - Text

    /// `&`, `<`, `>`, `"` and `'` as references: text anywhere in markup, attribute values included.
    public static func escaped(_ text: some StringProtocol) -> String {
        var output = ""
        output.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": output += "&amp;"
            case "<": output += "&lt;"
            case ">": output += "&gt;"
            case "\"": output += "&quot;"
            case "'": output += "&#39;"
            default: output.append(character)
            }
        }
        return output
    }

    static let named: [String: String] = ["amp": "&", "lt": "<", "gt": ">", "quot": "\"", "apos": "'", "nbsp": "\u{A0}", "colon": ":", "tab": "\t", "newline": "\n"]

    /// Character references as the characters they stand for (numeric ones, and the common named ones; an unknown
    /// one stays as written). A reference to nothing a text may hold (NUL, a surrogate, beyond Unicode) is U+FFFD.
    static func decoded(_ text: Substring) -> String {
        guard text.contains("&") else { return String(text) }
        var output = ""
        var index = text.startIndex
        while index < text.endIndex {
            let character = text[index]
            guard character == "&", let semicolon = text[index...].prefix(12).firstIndex(of: ";") else {
                output.append(character)
                index = text.index(after: index)
                continue
            }
            let name = text[text.index(after: index)..<semicolon]
            if name.hasPrefix("#") {
                let digits = name.dropFirst()
                let value = digits.first == "x" || digits.first == "X" ? UInt32(digits.dropFirst(), radix: 16) : UInt32(digits, radix: 10)
                if let value {
                    output.unicodeScalars.append(value == 0 ? "\u{FFFD}" : Unicode.Scalar(value) ?? "\u{FFFD}")
                    index = text.index(after: semicolon)
                    continue
                }
            } else if let character = named[name.lowercased()] {
                output += character
                index = text.index(after: semicolon)
                continue
            }
            output.append(character)
            index = text.index(after: index)
        }
        return output
    }

    /// A plain body as markup: escaped, its `http`, `https` and `mailto` links made links (each checked as any link).
    public static func plain(_ text: String, route: (String) -> String = { $0 }) -> String {
        linked(escaped(text), route: route)
    }

    /// Links made links in text already escaped: an address runs to a space or a `<`, less the punctuation that ends a
    /// sentence after it.
    static func linked(_ escapedText: String, route: (String) -> String = { $0 }) -> String {
        var output = ""
        var rest = Substring(escapedText)
        while let start = firstLinkStart(in: rest) {
            output += rest[..<start]
            var end = rest[start...].firstIndex { $0.isWhitespace || $0 == "<" } ?? rest.endIndex
            while end > start, ".,;:!?)]'\"".contains(rest[rest.index(before: end)]) { end = rest.index(before: end) }
            // An escaped quote or apostrophe ends it too (`&quot;`, `&#39;` as the escaping wrote them).
            let candidate = rest[start..<end]
            let trimmed = candidate.range(of: "&quot;").map { candidate[..<$0.lowerBound] } ?? candidate.range(of: "&#39;").map { candidate[..<$0.lowerBound] } ?? candidate
            if let href = link(String(trimmed)), trimmed.count > 8 {
                output += #"<a href="\#(escaped(route(href)))" rel="noopener noreferrer nofollow" target="_blank">\#(trimmed)</a>"#
            } else {
                output += trimmed
            }
            rest = rest[trimmed.endIndex...]
        }
        return output + rest
    }

    static func firstLinkStart(in text: Substring) -> Substring.Index? {
        var found: Substring.Index?
        for scheme in ["https://", "http://", "mailto:"] {
            guard let range = text.range(of: scheme, options: .caseInsensitive) else { continue }
            // At a word's start only (`xhttps://` is no link).
            if range.lowerBound > text.startIndex, text[text.index(before: range.lowerBound)].isLetter { continue }
            if found.map({ range.lowerBound < $0 }) ?? true { found = range.lowerBound }
        }
        return found
    }
}

/// One tag as a lenient tokenizer reads it: its lowercased name, whether it closes, its attributes; `nil` for text
/// that only looks like one.
struct Tag {
    let name: String
    let isClosing: Bool
    let selfCloses: Bool
    let isDeclaration: Bool
    let attributes: [(String, String)]
    let end: String.Index

    init?(_ text: Substring) {
        var index = text.index(after: text.startIndex)
        guard index < text.endIndex else { return nil }
        if text[index] == "!" || text[index] == "?" {
            guard let close = text[index...].firstIndex(of: ">") else { return nil }
            name = ""
            isClosing = false
            selfCloses = false
            isDeclaration = true
            attributes = []
            end = text.index(after: close)
            return
        }
        let closing = text[index] == "/"
        if closing { index = text.index(after: index) }
        let nameEnd = text[index...].firstIndex { !($0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-")) } ?? text.endIndex
        guard nameEnd > index, text[index].isLetter else { return nil }
        let name = text[index..<nameEnd].lowercased()
        index = nameEnd
        var attributes: [(String, String)] = []
        var selfCloses = false
        while true {
            while index < text.endIndex, text[index].isWhitespace || text[index] == "/" {
                selfCloses = text[index] == "/"
                index = text.index(after: index)
            }
            guard index < text.endIndex else { return nil }
            if text[index] == ">" { break }
            selfCloses = false
            let keyEnd = text[index...].firstIndex { $0.isWhitespace || $0 == "=" || $0 == ">" || $0 == "/" } ?? text.endIndex
            let key = text[index..<keyEnd].lowercased()
            index = keyEnd
            while index < text.endIndex, text[index].isWhitespace { index = text.index(after: index) }
            var value = ""
            if index < text.endIndex, text[index] == "=" {
                index = text.index(after: index)
                while index < text.endIndex, text[index].isWhitespace { index = text.index(after: index) }
                guard index < text.endIndex else { return nil }
                if text[index] == "\"" || text[index] == "'" {
                    let quote = text[index]
                    let start = text.index(after: index)
                    guard let close = text[start...].firstIndex(of: quote) else { return nil }
                    value = String(text[start..<close])
                    index = text.index(after: close)
                } else {
                    let valueEnd = text[index...].firstIndex { $0.isWhitespace || $0 == ">" } ?? text.endIndex
                    value = String(text[index..<valueEnd])
                    index = valueEnd
                }
            }
            if !key.isEmpty { attributes.append((key, value)) }
        }
        self.name = name
        self.isClosing = closing
        self.selfCloses = selfCloses
        self.isDeclaration = false
        self.attributes = attributes
        self.end = text.index(after: index)
    }

    func attribute(_ name: String) -> String? { attributes.first { $0.0 == name }?.1 }
}
