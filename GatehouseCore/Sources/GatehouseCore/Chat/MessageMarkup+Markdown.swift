import Foundation

/// The Markdown members write, as the `formatted_body` the gateway sends with the plain body: `**bold**`,
/// `*italic*` and `_italic_`, `~~struck~~`, `` `code` ``, fenced code blocks, `- ` and `1. ` lists, `> ` quotes, and
/// links. Everything else is text. The text is escaped first and only this subset's tags are added, so what a member
/// types never becomes markup of its own.
extension MessageMarkup {
    /// The formatted body of `text`, or `nil` when nothing in it is formatted (a link alone is no formatting: every
    /// client makes one of a plain body's links).
    public static func formatted(_ text: String) -> String? {
        var blocks: [(html: String, isParagraph: Bool)] = []
        var paragraph: [String] = []
        var list: (ordered: Bool, items: [String])?
        var quote: [String] = []
        var code: [String]?
        func flush() {
            if !paragraph.isEmpty { blocks.append((paragraph.map(inline).joined(separator: "<br>"), true)) }
            if let open = list {
                let tag = open.ordered ? "ol" : "ul"
                blocks.append(("<\(tag)>" + open.items.map { "<li>\(inline($0))</li>" }.joined() + "</\(tag)>", false))
            }
            if !quote.isEmpty { blocks.append(("<blockquote>" + quote.map(inline).joined(separator: "<br>") + "</blockquote>", false)) }
            paragraph = []
            list = nil
            quote = []
        }
        for line in text.split(separator: "\n", omittingEmptySubsequences: false).map({ String($0).replacingOccurrences(of: "\r", with: "") }) {
            if var lines = code {
                if line.trimmingCharacters(in: .whitespaces).hasPrefix("```") {
                    blocks.append(("<pre><code>" + escaped(lines.joined(separator: "\n")) + "</code></pre>", false))
                    code = nil
                } else {
                    lines.append(line)
                    code = lines
                }
                continue
            }
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("```") {
                flush()
                code = []
            } else if let item = listItem(trimmed) {
                if list?.ordered != item.ordered { flush() }
                list = (item.ordered, (list?.items ?? []) + [item.text])
            } else if trimmed.hasPrefix(">") {
                if !paragraph.isEmpty || list != nil { flush() }
                quote.append(String(trimmed.dropFirst()).trimmingCharacters(in: .whitespaces))
            } else if trimmed.isEmpty {
                flush()
            } else {
                if list != nil || !quote.isEmpty { flush() }
                paragraph.append(line)
            }
        }
        flush()
        // A fence left open runs to the end.
        if let lines = code { blocks.append(("<pre><code>" + escaped(lines.joined(separator: "\n")) + "</code></pre>", false)) }
        let html = blocks.count == 1 ? blocks[0].html : blocks.map { $0.isParagraph ? "<p>\($0.html)</p>" : $0.html }.joined()
        // Nothing but the text and its links: no formatting to send.
        let bare = html.replacingOccurrences(of: #"<a href="[^"]*" rel="noopener noreferrer nofollow" target="_blank">([^<]*)</a>"#, with: "$1", options: .regularExpression)
        return bare == text.split(separator: "\n", omittingEmptySubsequences: false).map { escaped($0) }.joined(separator: "<br>") ? nil : html
    }

    static func listItem(_ line: String) -> (ordered: Bool, text: String)? {
        if line.hasPrefix("- ") || line.hasPrefix("* ") || line.hasPrefix("+ ") { return (false, String(line.dropFirst(2))) }
        let digits = line.prefix { $0.isASCII && $0.isNumber }
        guard !digits.isEmpty, digits.count <= 9 else { return nil }
        let rest = line.dropFirst(digits.count)
        return rest.hasPrefix(". ") ? (true, String(rest.dropFirst(2))) : nil
    }

    /// One line's inline formatting: code spans first (nothing inside them is formatting), then bold, struck and
    /// italic, then links.
    static func inline(_ line: String) -> String {
        var output = ""
        let pieces = line.components(separatedBy: "`")
        // An odd number of backticks leaves the last one as text.
        for (index, piece) in pieces.enumerated() {
            if index % 2 == 1 && index < pieces.count - 1 {
                output += "<code>" + escaped(piece) + "</code>"
            } else {
                if index % 2 == 1 { output += "`" }
                output += emphasis(linked(escaped(piece)))
            }
        }
        return output
    }

    /// `**x**`, `~~x~~`, then `*x*` and `_x_`, each pair within the text (never inside a link's markup).
    static func emphasis(_ html: String) -> String {
        var text = html
        for (marker, tag) in [("**", "strong"), ("__", "strong"), ("~~", "del"), ("*", "em"), ("_", "em")] {
            text = paired(text, marker: marker, tag: tag)
        }
        return text
    }

    static func paired(_ html: String, marker: String, tag: String) -> String {
        // The text between tags only: a link's address keeps its `_` and `*`.
        var output = ""
        var rest = Substring(html)
        while !rest.isEmpty {
            if rest.hasPrefix("<a "), let close = rest.range(of: "</a>") {
                output += rest[..<close.upperBound]
                rest = rest[close.upperBound...]
                continue
            }
            let next = rest.range(of: "<a ")?.lowerBound ?? rest.endIndex
            output += pairedText(String(rest[..<next]), marker: marker, tag: tag)
            rest = rest[next...]
        }
        return output
    }

    static func isWordCharacter(_ character: Character) -> Bool { character.isLetter || character.isNumber }

    static func pairedText(_ text: String, marker: String, tag: String) -> String {
        let parts = text.components(separatedBy: marker)
        guard parts.count >= 3 else { return text }
        var output = parts[0]
        var index = 1
        while index < parts.count {
            // A pair whose inside is text (not empty, not starting or ending with a space) is formatting.
            // `_` and `__` only at a word's edges (`snake_case` is no emphasis).
            let atEdges = !marker.hasPrefix("_")
                || (index + 1 < parts.count && !(parts[index - 1].last.map(isWordCharacter) ?? false) && !(parts[index + 1].first.map(isWordCharacter) ?? false))
            if atEdges, index + 1 < parts.count, let inside = parts[index].first, !inside.isWhitespace, parts[index].last?.isWhitespace == false {
                output += "<\(tag)>\(parts[index])</\(tag)>" + parts[index + 1]
                index += 2
            } else {
                output += marker + parts[index]
                index += 1
            }
        }
        return output
    }
}
