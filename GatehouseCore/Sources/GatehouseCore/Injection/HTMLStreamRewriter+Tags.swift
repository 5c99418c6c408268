import Foundation

/// One whole tag at a time: its URL attributes through the rewriter, `<meta>` refreshes and cookies, character
/// references, and the raw-text elements a start tag opens.
extension HTMLStreamRewriter {
    /// Writes one complete tag as the browser may see it, and says whether it opens `<body>` and which raw-text
    /// element (whose content is no markup) it opens, if any.
    static func writeTag(_ tag: UnsafeBufferPointer<UInt8>, urls: URLRewriter?, into output: inout [UInt8]) -> (isBody: Bool, rawText: [UInt8]?) {
        let isEndTag = tag.count > 1 && tag[1] == UInt8(ascii: "/")
        let nameStart = isEndTag ? 2 : 1
        var nameEnd = nameStart
        while nameEnd < tag.count, !isSpace(tag[nameEnd]), tag[nameEnd] != UInt8(ascii: ">"), tag[nameEnd] != UInt8(ascii: "/") {
            nameEnd += 1
        }
        if isEndTag {
            output.append(contentsOf: tag)
            return (false, nil)
        }
        // Compared in place: most tags are none of these, and need no copy of their name.
        let name = tag[nameStart..<nameEnd]
        let start = output.count
        if equalsIgnoringCase(name, "meta") {
            if let kept = rewriteMeta(Array(tag), nameEnd: nameEnd, urls: urls) { output += kept }  // else neutralised: dropped
        } else if let urls {
            // Links and forms only: a `<base>` or a `<link>` to another host is the page's policy's business (`base-uri`,
            // `default-src`), not a way out for the member.
            let departs = urls.departures != nil && isNavigationElement(name)
            rewriteAttributes(tag, nameEnd: nameEnd, only: isURLAttribute, into: &output) { name, value in
                if equalsIgnoringCase(name, "srcset") { return urls.rewriteSourceSet(value) }
                if let mapped = urls.rewrite(value) { return mapped }
                // A link or a form leaving the organization's apps, read as the browser will (references decoded).
                guard departs, isNavigationAttribute(name) else { return value }
                let decoded = decodeCharacterReferences(value) ?? value
                return urls.rewriteNavigation(decoded).map(escapeAttribute) ?? value
            }
        } else {
            output.append(contentsOf: tag)
        }
        // Only a tag that says `manifest` at all is read further: a page's other links cost one scan of their bytes.
        if equalsIgnoringCase(name, "link"), contains(tag, ignoringCase: "manifest"), !contains(tag, ignoringCase: "crossorigin") {
            fetchManifestWithCredentials(tagAt: start, nameEnd: nameEnd, in: &output)
        }
        let selfClosing = tag.count >= 2 && tag[tag.count - 2] == UInt8(ascii: "/")
        return (equalsIgnoringCase(name, "body"), selfClosing ? nil : rawTextElement(name))
    }

    /// A `<link rel="manifest">` to the page's own origin, written at `start` of `output`, gets
    /// `crossorigin="use-credentials"`: browsers fetch a manifest without cookies otherwise, and the gateway serves
    /// nothing of an app's to a request without the member's session. One that says `crossorigin` already, or leads to
    /// another origin, is left as it is.
    static func fetchManifestWithCredentials(tagAt start: Int, nameEnd: Int, in output: inout [UInt8]) {
        let written = Array(output[start...])
        guard written.count > nameEnd + 1 else { return }
        var isManifest = false
        var href: String?
        _ = rewriteAttributes(written, nameEnd: nameEnd, only: { equalsIgnoringCase($0, "rel") || equalsIgnoringCase($0, "href") }) { name, value in
            if equalsIgnoringCase(name, "rel") {
                isManifest = value.lowercased().split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).contains("manifest")
            } else {
                href = value
            }
            return value
        }
        guard isManifest, let href, isRelativeReference(href) else { return }
        var end = output.count - 1
        if output[end - 1] == UInt8(ascii: "/") { end -= 1 }
        output.insert(contentsOf: " crossorigin=\"use-credentials\"".utf8, at: end)
    }

    /// A URL with neither scheme nor host (`manifest.json`, `/apps/x/manifest.json`): one of the page's own origin.
    static func isRelativeReference(_ url: String) -> Bool {
        let url = url.trimmingCharacters(in: .whitespacesAndNewlines)
        // `//host/…`, and `/\host/…` and `\\host/…` as browsers read them.
        if url.hasPrefix("//") || url.hasPrefix("/\\") || url.hasPrefix("\\") { return false }
        guard let colon = url.firstIndex(of: ":") else { return true }
        return url[..<colon].contains { $0 == "/" || $0 == "?" || $0 == "#" }
    }

    /// Whether `bytes` hold `lowercase` (a literal) anywhere, in any letter case: no copy made.
    static func contains(_ bytes: UnsafeBufferPointer<UInt8>, ignoringCase lowercase: StaticString) -> Bool {
        let count = lowercase.utf8CodeUnitCount
        guard bytes.count >= count else { return false }
        let needle = UnsafeBufferPointer(start: lowercase.utf8Start, count: count)
        var offset = 0
        while offset <= bytes.count - count {
            var index = 0
            while index < count, bytes[offset + index].asciiLowercased == needle[index] { index += 1 }
            if index == count { return true }
            offset += 1
        }
        return false
    }

    /// Whether `bytes` spell `lowercase` in any letter case. The names compared are literals: no arrays of them
    /// made or looked up per tag.
    static func equalsIgnoringCase(_ bytes: Slice<UnsafeBufferPointer<UInt8>>, _ lowercase: StaticString) -> Bool {
        guard bytes.count == lowercase.utf8CodeUnitCount else { return false }
        var index = bytes.startIndex
        var letter = lowercase.utf8Start
        for _ in 0..<bytes.count {
            guard bytes[index].asciiLowercased == letter.pointee else { return false }
            index += 1
            letter += 1
        }
        return true
    }

    /// Whether an attribute's name is one whose value is a URL (`href`, `src`, `action`, `formaction`, `poster`,
    /// `srcset`), by its length and first letter first (most attributes are none).
    static func isURLAttribute(_ name: Slice<UnsafeBufferPointer<UInt8>>) -> Bool {
        guard let first = name.first?.asciiLowercased else { return false }
        switch (name.count, first) {
        case (3, UInt8(ascii: "s")): return equalsIgnoringCase(name, "src")
        case (4, UInt8(ascii: "h")): return equalsIgnoringCase(name, "href")
        case (6, UInt8(ascii: "a")): return equalsIgnoringCase(name, "action")
        case (6, UInt8(ascii: "p")): return equalsIgnoringCase(name, "poster")
        case (6, UInt8(ascii: "s")): return equalsIgnoringCase(name, "srcset")
        case (10, UInt8(ascii: "f")): return equalsIgnoringCase(name, "formaction")
        default: return false
        }
    }

    /// `a`, `area`, `form`, `button`, `input`: the elements a member follows or submits.
    static func isNavigationElement(_ name: Slice<UnsafeBufferPointer<UInt8>>) -> Bool {
        equalsIgnoringCase(name, "a") || equalsIgnoringCase(name, "area") || equalsIgnoringCase(name, "form")
            || equalsIgnoringCase(name, "button") || equalsIgnoringCase(name, "input")
    }

    /// `href`, `action`, `formaction`: where the browser goes when the member follows or submits.
    static func isNavigationAttribute(_ name: Slice<UnsafeBufferPointer<UInt8>>) -> Bool {
        equalsIgnoringCase(name, "href") || equalsIgnoringCase(name, "action") || equalsIgnoringCase(name, "formaction")
    }

    /// The raw-text element (`script`, `style`, `template`, `textarea`, `title`, `xmp`, `iframe`, `noembed`,
    /// `noframes`, `noscript`) a start tag's name opens, in lower case, if any: its content is no markup.
    static func rawTextElement(_ name: Slice<UnsafeBufferPointer<UInt8>>) -> [UInt8]? {
        let candidates: [StaticString] =
            switch name.count {
            case 3: ["xmp"]
            case 5: ["style", "title"]
            case 6: ["script", "iframe"]
            case 7: ["noembed"]
            case 8: ["template", "textarea", "noframes", "noscript"]
            default: []
            }
        guard let found = candidates.first(where: { equalsIgnoringCase(name, $0) }) else { return nil }
        return Array(UnsafeBufferPointer(start: found.utf8Start, count: found.utf8CodeUnitCount))
    }

    /// A `<meta>` tag as the browser may see it, or `nil` to drop it: `http-equiv="set-cookie"` would set a cookie
    /// around the jar, and a refresh to a URL outside the gateway would leave it; a refresh inside is mapped.
    static func rewriteMeta(_ tag: [UInt8], nameEnd: Int, urls: URLRewriter?) -> [UInt8]? {
        var equiv: String?
        _ = rewriteAttributes(tag, nameEnd: nameEnd, only: { equalsIgnoringCase($0, "http-equiv") }) { _, value in
            equiv = value.trimmingCharacters(in: .whitespaces).lowercased()
            return value
        }
        switch equiv {
        case "set-cookie":
            return nil
        case "refresh":
            guard let urls else { return tag }
            var keep = true
            let rewritten = rewriteAttributes(tag, nameEnd: nameEnd, only: { equalsIgnoringCase($0, "content") }) { _, value in
                // The browser reads the value with character references decoded (`https&#58;//…`).
                guard let decoded = decodeCharacterReferences(value), let mapped = urls.rewriteRefresh(decoded) else {
                    keep = false
                    return value
                }
                return mapped == decoded ? value : escapeAttribute(mapped)
            }
            return keep ? rewritten : nil
        default:
            return tag
        }
    }

    static let namedReferences: [String: String] = [
        "amp": "&", "lt": "<", "gt": ">", "quot": "\"", "apos": "'", "colon": ":", "sol": "/", "bsol": "\\", "period": ".",
        "semi": ";", "comma": ",", "equals": "=", "tab": "\t", "newline": "\n", "num": "#", "quest": "?", "nbsp": "\u{A0}",
    ]

    /// An attribute value with the character references decoded that can spell a URL's scheme or punctuation, or
    /// `nil` when a numeric one is invalid (then the caller treats the value as unsafe rather than guess).
    static func decodeCharacterReferences(_ value: String) -> String? {
        guard value.containsBytes(of: "&") else { return value }
        var result = ""
        var rest = Substring(value)
        while let ampersand = rest.firstIndex(of: "&") {
            result += rest[..<ampersand]
            let after = rest[rest.index(after: ampersand)...]
            let body = after.prefix { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "#") }
            var consumed = body.endIndex
            if consumed < after.endIndex, after[consumed] == ";" { consumed = after.index(after: consumed) }
            if body.hasPrefix("#") {
                let digits = body.dropFirst()
                let number = digits.first == "x" || digits.first == "X" ? UInt32(digits.dropFirst(), radix: 16) : UInt32(digits, radix: 10)
                guard let number, let scalar = Unicode.Scalar(number) else { return nil }
                result.unicodeScalars.append(scalar)
            } else if let named = namedReferences[body.lowercased()] {
                result += named
            } else {
                // Not a reference that can spell a URL's punctuation (`&c=2` in a query): the browser keeps it as text.
                result += "&" + after[..<consumed]
            }
            rest = after[consumed...]
        }
        return result + rest
    }

    public static func escapeAttribute(_ value: String) -> String {
        value.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "\"", with: "&quot;").replacingOccurrences(of: "'", with: "&#39;")
    }

    /// Passes the value of every attribute of one start tag whose name (in any case) `wanted` accepts through
    /// `rewrite`, leaving every other byte as it was.
    static func rewriteAttributes(
        _ tag: [UInt8], nameEnd: Int, only wanted: (Slice<UnsafeBufferPointer<UInt8>>) -> Bool,
        _ rewrite: (Slice<UnsafeBufferPointer<UInt8>>, String) -> String
    ) -> [UInt8] {
        var result: [UInt8] = []
        tag.withUnsafeBufferPointer { rewriteAttributes($0, nameEnd: nameEnd, only: wanted, into: &result, rewrite) }
        return result
    }

    static func rewriteAttributes(
        _ tag: UnsafeBufferPointer<UInt8>, nameEnd: Int, only wanted: (Slice<UnsafeBufferPointer<UInt8>>) -> Bool, into result: inout [UInt8],
        _ rewrite: (Slice<UnsafeBufferPointer<UInt8>>, String) -> String
    ) {
        // One pass finds the values to replace; the tag is then copied around them (most tags: in one piece).
        var replacements: [(range: Range<Int>, value: String)] = []
        var index = nameEnd
        while index < tag.count {
            // Whitespace and stray slashes between attributes.
            while index < tag.count, isSpace(tag[index]) || tag[index] == UInt8(ascii: "/") { index += 1 }
            guard index < tag.count, tag[index] != UInt8(ascii: ">") else { break }
            let attributeStart = index
            while index < tag.count, !isSpace(tag[index]), tag[index] != UInt8(ascii: "="), tag[index] != UInt8(ascii: ">") {
                index += 1
            }
            let attributeName = tag[attributeStart..<index]
            var lookahead = index
            while lookahead < tag.count, isSpace(tag[lookahead]) { lookahead += 1 }
            guard lookahead < tag.count, tag[lookahead] == UInt8(ascii: "=") else { continue }
            index = lookahead + 1
            while index < tag.count, isSpace(tag[index]) { index += 1 }
            guard index < tag.count else { break }
            let valueStart: Int
            var valueEnd: Int
            let quote: UInt8? = tag[index] == UInt8(ascii: "\"") || tag[index] == UInt8(ascii: "'") ? tag[index] : nil
            if let quote {
                valueStart = index + 1
                valueEnd = firstIndex(of: quote, in: tag, from: valueStart)
            } else {
                valueStart = index
                valueEnd = index
                while valueEnd < tag.count, !isSpace(tag[valueEnd]), tag[valueEnd] != UInt8(ascii: ">") { valueEnd += 1 }
            }
            if wanted(attributeName) {
                let value = tag[valueStart..<valueEnd]
                let rewritten = rewrite(attributeName, String(decoding: value, as: UTF8.self))
                if !rewritten.utf8.elementsEqual(value) { replacements.append((valueStart..<valueEnd, rewritten)) }
            }
            index = quote != nil && valueEnd < tag.count ? valueEnd + 1 : valueEnd
        }
        var copied = 0
        for (range, value) in replacements {
            result.append(contentsOf: UnsafeBufferPointer(rebasing: tag[copied..<range.lowerBound]))
            result += value.utf8
            copied = range.upperBound
        }
        result.append(contentsOf: UnsafeBufferPointer(rebasing: tag[copied...]))
    }
}
