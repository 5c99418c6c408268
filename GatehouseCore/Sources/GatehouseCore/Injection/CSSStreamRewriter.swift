/// Rewrites the URLs of a style sheet chunk by chunk: `url(…)` (quoted or not) and `@import "…"` pass through `urls`,
/// so that `url(/fonts/x.woff)` of an app on a path mount names `/apps/<slug>/fonts/x.woff`. Comments and strings are
/// copied as they are; a token cut by a chunk's end is held until its end arrives (at most `maximumHeldBytes`, past
/// which it goes out unchanged).
public struct CSSStreamRewriter: Sendable {
    public static let maximumHeldBytes = 16 * 1024

    private let urls: URLRewriter
    private var held: [UInt8] = []
    /// The last byte before `held` (or of everything so far): whether a `url(` follows a name (`myurl(`).
    private var before: UInt8 = 0

    public init(urls: URLRewriter) {
        self.urls = urls
    }

    public mutating func feed(_ chunk: some Collection<UInt8>) -> [UInt8] {
        var input = held
        held = []
        input += chunk
        let before = self.before
        defer { if let last = (held.isEmpty ? input.last : input.dropLast(held.count).last) { self.before = last } }
        var output: [UInt8] = []
        output.reserveCapacity(input.count + 64)
        var index = 0
        while index < input.count {
            switch scan(input, at: index, after: index > 0 ? input[index - 1] : before, into: &output) {
            case .advanced(let next): index = next
            case .incomplete:
                if input.count - index > Self.maximumHeldBytes {
                    output += input[index...]
                } else {
                    held = Array(input[index...])
                }
                return output
            }
        }
        return output
    }

    /// What was held back at the end: an unfinished token, as it came.
    public mutating func finish() -> [UInt8] {
        defer { held = [] }
        return held
    }

    enum Step {
        case advanced(Int)
        /// The token starting here ends past the input: hold it.
        case incomplete
    }

    /// Copies (or rewrites) one piece starting at `start`: a comment, a string, a `url(…)`, an `@import` or a byte.
    func scan(_ input: [UInt8], at start: Int, after previous: UInt8, into output: inout [UInt8]) -> Step {
        let byte = input[start]
        switch byte {
        case UInt8(ascii: "/"):
            guard start + 1 < input.count else { return .incomplete }
            guard input[start + 1] == UInt8(ascii: "*") else { break }
            guard let end = Self.find([UInt8(ascii: "*"), UInt8(ascii: "/")], in: input, from: start + 2) else { return .incomplete }
            output += input[start..<(end + 2)]
            return .advanced(end + 2)
        case UInt8(ascii: "\""), UInt8(ascii: "'"):
            guard let end = Self.endOfString(input, quoteAt: start) else { return .incomplete }
            output += input[start...end]
            return .advanced(end + 1)
        case UInt8(ascii: "u"), UInt8(ascii: "U"):
            // `url(` not inside a longer name (`myurl(`): the byte before is no name character.
            if Self.isNameByte(previous) { break }
            guard start + 4 <= input.count else {
                return Self.couldStart("url(", input[start...]) ? .incomplete : .advanced(copy(byte, &output, start))
            }
            guard Self.matches("url(", input, at: start) else { break }
            return rewriteURLFunction(input, at: start, into: &output)
        case UInt8(ascii: "@"):
            guard start + 7 <= input.count else {
                return Self.couldStart("@import", input[start...]) ? .incomplete : .advanced(copy(byte, &output, start))
            }
            guard Self.matches("@import", input, at: start) else { break }
            var index = start + 7
            while index < input.count, Self.isSpace(input[index]) { index += 1 }
            guard index < input.count else { return .incomplete }
            guard input[index] == UInt8(ascii: "\"") || input[index] == UInt8(ascii: "'") else {
                output += input[start..<index]  // `@import url(…)`: the function is read next
                return .advanced(index)
            }
            guard let end = Self.endOfString(input, quoteAt: index) else { return .incomplete }
            output += input[start...index]
            output += mapped(input[(index + 1)..<end])
            output.append(input[end])
            return .advanced(end + 1)
        default:
            break
        }
        output.append(byte)
        return .advanced(start + 1)
    }

    private func copy(_ byte: UInt8, _ output: inout [UInt8], _ index: Int) -> Int {
        output.append(byte)
        return index + 1
    }

    /// `url(` at `start`: the URL inside, quoted or not, mapped; the rest as it was.
    func rewriteURLFunction(_ input: [UInt8], at start: Int, into output: inout [UInt8]) -> Step {
        var index = start + 4
        while index < input.count, Self.isSpace(input[index]) { index += 1 }
        guard index < input.count else { return .incomplete }
        if input[index] == UInt8(ascii: "\"") || input[index] == UInt8(ascii: "'") {
            guard let end = Self.endOfString(input, quoteAt: index) else { return .incomplete }
            output += input[start...index]
            output += mapped(input[(index + 1)..<end])
            output.append(input[end])
            return .advanced(end + 1)
        }
        var end = index
        while end < input.count, input[end] != UInt8(ascii: ")"), !Self.isSpace(input[end]) { end += 1 }
        guard end < input.count else { return .incomplete }
        output += input[start..<index]
        output += mapped(input[index..<end])
        return .advanced(end)
    }

    private func mapped(_ url: ArraySlice<UInt8>) -> [UInt8] {
        // A URL with an escape (`\)`) is left as written: the browser reads it unescaped, which the mapping would not.
        guard !url.contains(UInt8(ascii: "\\")), let text = String(validating: url, as: UTF8.self), let rewritten = urls.rewrite(text) else {
            return Array(url)
        }
        return Array(rewritten.utf8)
    }

    static func endOfString(_ input: [UInt8], quoteAt start: Int) -> Int? {
        let quote = input[start]
        var index = start + 1
        while index < input.count {
            switch input[index] {
            case quote: return index
            case UInt8(ascii: "\\"): index += 2
            case UInt8(ascii: "\n"): return index  // an unterminated string ends at the line's end (CSS Syntax §4.3.5)
            default: index += 1
            }
        }
        return nil
    }

    static func find(_ needle: [UInt8], in input: [UInt8], from start: Int) -> Int? {
        guard input.count >= needle.count else { return nil }
        var index = start
        while index + needle.count <= input.count {
            if input[index] == needle[0], input[index..<(index + needle.count)].elementsEqual(needle) { return index }
            index += 1
        }
        return nil
    }

    static func matches(_ word: StaticString, _ input: [UInt8], at start: Int) -> Bool {
        let count = word.utf8CodeUnitCount
        guard start + count <= input.count else { return false }
        for offset in 0..<count where input[start + offset].asciiLowercased != word.utf8Start[offset] { return false }
        return true
    }

    /// Whether `rest` (shorter than `word`) could be the start of it.
    static func couldStart(_ word: StaticString, _ rest: ArraySlice<UInt8>) -> Bool {
        for (offset, byte) in rest.enumerated() where byte.asciiLowercased != word.utf8Start[offset] { return false }
        return true
    }

    static func isNameByte(_ byte: UInt8) -> Bool {
        byte.asciiLowercased >= UInt8(ascii: "a") && byte.asciiLowercased <= UInt8(ascii: "z")
            || byte >= UInt8(ascii: "0")
                && byte <= UInt8(ascii: "9")
            || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_") || byte >= 0x80
    }

    static func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0C || byte == 0x0D }
}
