import Foundation

/// Rewrites an HTML document chunk by chunk, never holding more than one tag: inserts `injection` right after the
/// opening `<body …>` tag (or at the end when there is none), passes URL attributes through `urls`, and drops
/// `<meta>` tags that would set cookies or refresh to somewhere outside the gateway.
///
/// It understands just enough HTML to be right where it matters: tags split across chunks, any letter case,
/// attribute values containing `>` or `<body`, comments, `<!doctype>`/`<?…>`, and raw-text elements (`script`,
/// `style`, `template`, `textarea`, `title`, …) whose content is never taken for tags.
public struct HTMLStreamRewriter: Sendable {
    enum State: Sendable, Equatable {
        case text
        /// Saw `<`; the tag (or not) is decided by the next bytes, kept in `pending`.
        case tagOpen
        case tag(quote: UInt8?)
        /// `<!--` seen; `dashes` counts the trailing dashes so far.
        case comment(dashes: Int)
        /// `<!…>` or `<?…>` that is not a comment.
        case declaration
        /// Inside a raw-text element; `matched` counts bytes of `</name` matched so far.
        case rawText(name: [UInt8], matched: Int)
        /// A tag passed through unchanged up to its end: one too long to keep, or a raw-text element's end tag.
        case passThroughTag(quote: UInt8?)
    }

    public static let maximumTagBytes = 16 * 1024

    private var state: State = .text
    private var pending: [UInt8] = []
    private let injection: [UInt8]?
    /// What goes at the start of the document's head, before any script of the app's: right after `<head …>`, or
    /// before the first tag that belongs in the head or the body when the document has no `<head>` tag.
    private let headInjection: [UInt8]?
    private let urls: URLRewriter?
    public private(set) var hasInjected = false
    private var hasInjectedHead: Bool

    public init(injection: [UInt8]?, urls: URLRewriter?, headInjection: [UInt8]? = nil) {
        self.injection = injection
        self.headInjection = headInjection
        self.urls = urls
        self.hasInjected = injection == nil
        self.hasInjectedHead = headInjection == nil
    }

    /// Whether anything needs doing at all; when not, callers can skip the rewriter.
    public var isIdentity: Bool { injection == nil && headInjection == nil && urls == nil }

    public mutating func feed(_ chunk: some Collection<UInt8>) -> [UInt8] {
        if let output = chunk.withContiguousStorageIfAvailable({ feed(bytes: $0) }) { return output }
        return Array(chunk).withUnsafeBufferPointer { feed(bytes: $0) }
    }

    /// The byte-at-a-time state machine (`consume`) only sees the bytes that can change the state: runs of text, of
    /// a tag's inside, of raw text and of a comment are found with one scan each and copied in one go.
    mutating func feed(bytes chunk: UnsafeBufferPointer<UInt8>) -> [UInt8] {
        var output: [UInt8] = []
        // Room for the injection and for URLs that grow by their mount's prefix, so that the output is not copied
        // to a larger buffer halfway.
        output.reserveCapacity(chunk.count + chunk.count / 8 + (hasInjected ? 0 : injection?.count ?? 0))
        var index = 0
        while index < chunk.count {
            switch state {
            case .text:
                let next = Self.firstIndex(of: UInt8(ascii: "<"), in: chunk, from: index)
                output.append(contentsOf: UnsafeBufferPointer(rebasing: chunk[index..<next]))
                index = next
                // A whole tag in this chunk (most are) is written straight from it, without gathering it first.
                if let end = Self.endOfTag(in: chunk, at: index) {
                    complete(UnsafeBufferPointer(rebasing: chunk[index...end]), into: &output)
                    index = end + 1
                    continue
                }
            case .tag(let quote):
                let next =
                    quote.map { Self.firstIndex(of: $0, in: chunk, from: index) }
                    ?? Self.firstIndex(in: chunk, from: index) { $0 == UInt8(ascii: ">") || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "'") }
                pending.append(contentsOf: UnsafeBufferPointer(rebasing: chunk[index..<next]))
                index = next
                if pending.count > Self.maximumTagBytes { flushPending(into: &output, then: .passThroughTag(quote: quote)) }
            case .rawText(_, 0):
                let next = Self.firstIndex(of: UInt8(ascii: "<"), in: chunk, from: index)
                output.append(contentsOf: UnsafeBufferPointer(rebasing: chunk[index..<next]))
                index = next
            case .comment(0):
                let next = Self.firstIndex(of: UInt8(ascii: "-"), in: chunk, from: index)
                output.append(contentsOf: UnsafeBufferPointer(rebasing: chunk[index..<next]))
                index = next
            default:
                break
            }
            if index == chunk.count { break }
            consume(chunk[index], into: &output)
            index += 1
        }
        return output
    }

    /// Where the start or end tag opening at `start` (`<` then a letter, or `</` then a letter) ends, if its `>` is
    /// in `bytes` and it is not too long to keep; `nil` for anything else, which the state machine then reads.
    static func endOfTag(in bytes: UnsafeBufferPointer<UInt8>, at start: Int) -> Int? {
        guard start + 2 < bytes.count, bytes[start] == UInt8(ascii: "<") else { return nil }
        var index = start + 1
        if bytes[index] == UInt8(ascii: "/") { index += 1 }
        guard isLetter(bytes[index]) else { return nil }
        // Byte by byte outside quotes (a tag's names and spaces are short: cheaper than a memchr call for each of
        // `>`, `"` and `'`), from quote to quote with memchr inside them (a value may be long: a style, a data URL).
        let limit = min(bytes.count, start + maximumTagBytes)
        let window = UnsafeBufferPointer(rebasing: bytes[..<limit])
        while index < limit {
            switch bytes[index] {
            case UInt8(ascii: ">"):
                return index
            case UInt8(ascii: "\""), UInt8(ascii: "'"):
                index = firstIndex(of: bytes[index], in: window, from: index + 1) + 1
            default:
                index += 1
            }
        }
        return nil
    }

    static func firstIndex(of byte: UInt8, in bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int {
        guard start < bytes.count, let base = bytes.baseAddress,
            let found = memchr(base + start, Int32(byte), bytes.count - start)
        else { return bytes.count }
        return UnsafeRawPointer(found) - UnsafeRawPointer(base)
    }

    static func firstIndex(in bytes: UnsafeBufferPointer<UInt8>, from start: Int, where matches: (UInt8) -> Bool) -> Int {
        var index = start
        while index < bytes.count, !matches(bytes[index]) { index += 1 }
        return index
    }

    /// The rest of the document: a tag cut off by the end is passed through as it was, then the injection if no
    /// `<body>` came.
    public mutating func finish() -> [UInt8] {
        var output = pending
        pending = []
        if !hasInjectedHead, let headInjection {
            output += headInjection
            hasInjectedHead = true
        }
        if !hasInjected, let injection {
            output += injection
            hasInjected = true
        }
        return output
    }

    mutating func consume(_ byte: UInt8, into output: inout [UInt8]) {
        switch state {
        case .text:
            if byte == UInt8(ascii: "<") {
                pending.removeAll(keepingCapacity: true)
                pending.append(byte)
                state = .tagOpen
            } else {
                output.append(byte)
            }
        case .tagOpen:
            pending.append(byte)
            switch byte {
            case UInt8(ascii: "!"), UInt8(ascii: "?"):
                if byte == UInt8(ascii: "?") { flushPending(into: &output, then: .declaration) }
            case UInt8(ascii: "-") where isMarkupDeclaration && pending.count == 3:
                break  // `<!-`
            case UInt8(ascii: "-") where isMarkupDeclaration && pending.count == 4 && pending[2] == UInt8(ascii: "-"):
                flushPending(into: &output, then: .comment(dashes: 0))  // `<!--`
            case UInt8(ascii: "/"):
                if pending.count == 2 { state = .tagOpen } else { state = .tag(quote: nil) }
            default:
                if isMarkupDeclaration {
                    flushPending(into: &output, then: .declaration)
                    if byte == UInt8(ascii: ">") { state = .text }
                } else if Self.isLetter(byte) {
                    state = .tag(quote: nil)
                } else {
                    // `<` followed by something that starts no tag is text (`a < b`).
                    flushPending(into: &output, then: .text)
                    if byte == UInt8(ascii: "<") {
                        output.removeLast()
                        pending.removeAll(keepingCapacity: true)
                        pending.append(byte)
                        state = .tagOpen
                    }
                }
            }
        case .tag(let quote):
            pending.append(byte)
            let (next, endsTag) = Self.advanceInTag(quote, byte)
            if endsTag {
                completeTag(into: &output)
                return
            }
            state = .tag(quote: next)
            if pending.count > Self.maximumTagBytes { flushPending(into: &output, then: .passThroughTag(quote: next)) }
        case .passThroughTag(let quote):
            output.append(byte)
            let (next, endsTag) = Self.advanceInTag(quote, byte)
            state = endsTag ? .text : .passThroughTag(quote: next)
        case .comment(let dashes):
            output.append(byte)
            if byte == UInt8(ascii: ">") && dashes >= 2 {
                state = .text
            } else {
                state = .comment(dashes: byte == UInt8(ascii: "-") ? dashes + 1 : 0)
            }
        case .declaration:
            output.append(byte)
            if byte == UInt8(ascii: ">") { state = .text }
        case .rawText(let name, let matched):
            output.append(byte)
            // Matched against `</name`, without making it.
            if matched == name.count + 2 {
                // `</script` must be followed by whitespace, `/` or `>` to close.
                if byte == UInt8(ascii: ">") {
                    state = .text
                } else if byte == UInt8(ascii: "/") || Self.isSpace(byte) {
                    state = .passThroughTag(quote: nil)  // the rest of the end tag, up to its `>`
                } else {
                    state = .rawText(name: name, matched: byte == UInt8(ascii: "<") ? 1 : 0)
                }
            } else if Self.lowercased(byte) == (matched == 0 ? UInt8(ascii: "<") : matched == 1 ? UInt8(ascii: "/") : name[matched - 2]) {
                state = .rawText(name: name, matched: matched + 1)
            } else {
                state = .rawText(name: name, matched: byte == UInt8(ascii: "<") ? 1 : 0)
            }
        }
    }

    /// Whether the tag being opened started `<!`.
    private var isMarkupDeclaration: Bool { pending.count >= 2 && pending[1] == UInt8(ascii: "!") }

    private mutating func flushPending(into output: inout [UInt8], then next: State) {
        output += pending
        pending = []
        state = next
    }

    /// A whole tag is in `pending`: written as `complete` writes one.
    private mutating func completeTag(into output: inout [UInt8]) {
        var tag = pending
        pending = []
        tag.withUnsafeBufferPointer { complete($0, into: &output) }
        // The buffer is kept for the next tag.
        tag.removeAll(keepingCapacity: true)
        pending = tag
    }

    /// Rewrites and emits one whole tag, injects after `<body>`, enters raw text where needed.
    private mutating func complete(_ tag: UnsafeBufferPointer<UInt8>, into output: inout [UInt8]) {
        var afterTag: [UInt8]? = nil
        if !hasInjectedHead, let headInjection {
            switch Self.headPlace(of: tag) {
            case .after: afterTag = headInjection
            case .before: output += headInjection
            case .notYet: break
            }
            hasInjectedHead = Self.headPlace(of: tag) != .notYet
        }
        let (isBody, rawText) = Self.writeTag(tag, urls: urls, into: &output)
        if let afterTag { output += afterTag }
        state = rawText.map { .rawText(name: $0, matched: 0) } ?? .text
        if isBody, !hasInjected, let injection {
            output += injection
            hasInjected = true
        }
    }

    enum HeadPlace { case after, before, notYet }

    /// Where the head's injection goes around a tag: after `<head>`, not yet around `<html>`, before anything else.
    static func headPlace(of tag: UnsafeBufferPointer<UInt8>) -> HeadPlace {
        guard tag.count > 1, tag[1] != UInt8(ascii: "/") else { return .before }
        var nameEnd = 1
        while nameEnd < tag.count, !isSpace(tag[nameEnd]), tag[nameEnd] != UInt8(ascii: ">"), tag[nameEnd] != UInt8(ascii: "/") { nameEnd += 1 }
        let name = tag[1..<nameEnd]
        if equalsIgnoringCase(name, "head") { return .after }
        return equalsIgnoringCase(name, "html") ? .notYet : .before
    }

    /// Inside a tag: the quote in force after `byte`, and whether `byte` ends the tag (a `>` outside quotes).
    static func advanceInTag(_ quote: UInt8?, _ byte: UInt8) -> (quote: UInt8?, endsTag: Bool) {
        if let quote { return (byte == quote ? nil : quote, false) }
        if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") { return (byte, false) }
        return (nil, byte == UInt8(ascii: ">"))
    }

    static func isLetter(_ byte: UInt8) -> Bool { (byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z") }
    static func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0C || byte == 0x0D }
    static func lowercased(_ byte: UInt8) -> UInt8 { byte.asciiLowercased }
}
