import NIOCore
import NIOHTTP1

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The grammar the reader checks bytes against (RFC 9110, RFC 9112): chunk sizes and extensions, the bytes of
/// tokens, values and targets, the methods it knows, `Host`. Index loops over raw bytes throughout: generic collection
/// code allocates in a debug build, which the allocation tests count.
extension HTTP1RequestReader {
    /// `1*HEXDIG [ chunk-ext ]`; extensions are read over and ignored.
    static func chunkSize(_ line: ByteBuffer) throws -> Int {
        try line.withUnsafeReadableBytes { raw in
            var size = 0
            var index = 0
            while index < raw.count, let digit = hexValue(raw[index]) {
                guard index < 15 else { throw RequestFramingError(.badRequest, "a chunk size too large") }
                size = size << 4 | digit
                index += 1
            }
            guard index > 0 else { throw RequestFramingError(.badRequest, "a chunk size that is not hexadecimal") }
            try checkExtensions(UnsafeRawBufferPointer(rebasing: raw[index...]))
            return size
        }
    }

    /// `*( ";" ext-name [ "=" ext-val ] )`, `ext-val` a token or a quoted string, without the whitespace RFC 9112
    /// allows old senders around them (llhttp refuses it too; as llhttp, an empty name is let through).
    private static func checkExtensions(_ raw: UnsafeRawBufferPointer) throws {
        var index = 0
        func token() {
            while index < raw.count, isTokenByte(raw[index]) { index += 1 }
        }
        let malformed = RequestFramingError(.badRequest, "a malformed chunk extension")
        while index < raw.count {
            guard raw[index] == UInt8(ascii: ";") else { throw malformed }
            index += 1
            token()
            guard index < raw.count, raw[index] == UInt8(ascii: "=") else { continue }
            index += 1
            if index < raw.count, raw[index] == UInt8(ascii: "\"") {
                index += 1
                while index < raw.count, raw[index] != UInt8(ascii: "\"") {
                    if raw[index] == UInt8(ascii: "\\") { index += 1 }
                    guard index < raw.count, isValueByte(raw[index]) else { throw malformed }
                    index += 1
                }
                guard index < raw.count else { throw malformed }
                index += 1
            } else {
                token()
            }
        }
    }

    // MARK: - Bytes

    static func index(of byte: UInt8, in raw: UnsafeRawBufferPointer, from start: Int) -> Int? {
        guard start < raw.count, let base = raw.baseAddress else { return nil }
        guard let found = memchr(base + start, Int32(byte), raw.count - start) else { return nil }
        return base.distance(to: UnsafeRawPointer(found))
    }

    static func trimmed(_ text: Substring) -> Substring {
        var text = text
        while let first = text.first, first == " " || first == "\t" { text.removeFirst() }
        while let last = text.last, last == " " || last == "\t" { text.removeLast() }
        return text
    }

    @inline(__always) static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "*"),
            UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"),
            UInt8(ascii: "~"):
            true
        default: false
        }
    }

    /// `VCHAR`, `obs-text`, space and tab.
    @inline(__always) static func isValueByte(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: "\t") || (byte >= 0x20 && byte != 0x7F)
    }

    @inline(__always) static func isTargetByte(_ byte: UInt8) -> Bool {
        byte > 0x20 && byte < 0x7F
    }

    @inline(__always) static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    static func hexValue(_ byte: UInt8) -> Int? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): Int(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): Int(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): Int(byte - UInt8(ascii: "A") + 10)
        default: nil
        }
    }

    /// The methods NIO's decoder (llhttp) knows, as `HTTPMethod`.
    static func knownMethod(_ bytes: UnsafeRawBufferPointer) -> HTTPMethod? {
        switch bytes.count {
        case 3:
            if bytes.elementsEqual("GET".utf8) { return .GET }
            if bytes.elementsEqual("PUT".utf8) { return .PUT }
            if bytes.elementsEqual("ACL".utf8) { return .ACL }
        case 4:
            if bytes.elementsEqual("POST".utf8) { return .POST }
            if bytes.elementsEqual("HEAD".utf8) { return .HEAD }
        case 5:
            if bytes.elementsEqual("PATCH".utf8) { return .PATCH }
        case 6:
            if bytes.elementsEqual("DELETE".utf8) { return .DELETE }
        case 7:
            if bytes.elementsEqual("OPTIONS".utf8) { return .OPTIONS }
        default: break
        }
        return otherMethods[String(decoding: bytes, as: UTF8.self)]
    }

    private static let otherMethods: [String: HTTPMethod] = [
        "CONNECT": .CONNECT, "TRACE": .TRACE, "COPY": .COPY, "LOCK": .LOCK, "MKCOL": .MKCOL, "MOVE": .MOVE, "PROPFIND": .PROPFIND,
        "PROPPATCH": .PROPPATCH, "SEARCH": .SEARCH, "UNLOCK": .UNLOCK, "BIND": .BIND, "REBIND": .REBIND, "UNBIND": .UNBIND,
        "REPORT": .REPORT, "MKACTIVITY": .MKACTIVITY, "CHECKOUT": .CHECKOUT, "MERGE": .MERGE, "M-SEARCH": .MSEARCH, "NOTIFY": .NOTIFY,
        "SUBSCRIBE": .SUBSCRIBE, "UNSUBSCRIBE": .UNSUBSCRIBE, "PURGE": .PURGE, "MKCALENDAR": .MKCALENDAR, "LINK": .LINK,
        "UNLINK": .UNLINK, "SOURCE": .SOURCE, "QUERY": .RAW(value: "QUERY"),
    ]

    // MARK: - Host

    /// `uri-host [ ":" port ]` (RFC 9110 §7.2): a registered name, IPv4 or bracketed IPv6, no userinfo.
    static func isValidHost(_ raw: UnsafeRawBufferPointer, _ range: Range<Int>) -> Bool {
        var end = range.upperBound
        if range.lowerBound < end, raw[range.lowerBound] == UInt8(ascii: "[") {
            var close = range.lowerBound + 1
            while close < end, raw[close] != UInt8(ascii: "]") {
                let byte = raw[close]
                guard hexValue(byte) != nil || byte == UInt8(ascii: ":") || byte == UInt8(ascii: ".") else { return false }
                close += 1
            }
            guard close < end, close > range.lowerBound + 1 else { return false }
            guard close + 1 < end else { return true }
            return raw[close + 1] == UInt8(ascii: ":") && isPort(raw, (close + 2)..<end)
        }
        var colon = end
        while colon > range.lowerBound, raw[colon - 1] != UInt8(ascii: ":") { colon -= 1 }
        if colon > range.lowerBound {
            guard isPort(raw, colon..<end) else { return false }
            end = colon - 1
        }
        guard end > range.lowerBound, end - range.lowerBound <= 253 else { return false }
        var index = range.lowerBound
        while index < end {
            switch raw[index] {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"):
                index += 1
            default: return false
            }
        }
        return true
    }

    static func isPort(_ raw: UnsafeRawBufferPointer, _ range: Range<Int>) -> Bool {
        guard (1...5).contains(range.count) else { return false }
        var index = range.lowerBound
        while index < range.upperBound {
            guard isDigit(raw[index]) else { return false }
            index += 1
        }
        return true
    }
}
