/// Bytes read as ASCII text.
extension UInt8 {
    /// `0-9`, `a-f`, `A-F`.
    var isHexDigit: Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(self)
            || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(self)
    }

    /// `A-Z` as `a-z`, every other byte as it is.
    public var asciiLowercased: UInt8 { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(self) ? self | 0x20 : self }
}

extension [UInt8] {
    static let lowerHexDigits = Array("0123456789abcdef".utf8)
    static let upperHexDigits = Array("0123456789ABCDEF".utf8)

    /// Appends `byte` as two hex digits.
    public mutating func appendHex(_ byte: UInt8, uppercase: Bool = false) {
        let digits = uppercase ? Self.upperHexDigits : Self.lowerHexDigits
        append(digits[Int(byte >> 4)])
        append(digits[Int(byte & 0x0F)])
    }
}

extension String {
    /// `bytes` as lower-case hex, written in one pass (session ids, trace ids: asked on every request).
    public init(lowerHex bytes: UnsafeRawBufferPointer) {
        self.init(unsafeUninitializedCapacity: bytes.count * 2) { output in
            for (index, byte) in bytes.enumerated() {
                output[index * 2] = [UInt8].lowerHexDigits[Int(byte >> 4)]
                output[index * 2 + 1] = [UInt8].lowerHexDigits[Int(byte & 0x0F)]
            }
            return bytes.count * 2
        }
    }
}

extension StringProtocol {
    /// Without the spaces and tabs at either end (HTTP's optional whitespace, RFC 9110 §5.6.3), read as bytes: what
    /// every header value needs, without Foundation's Unicode character sets.
    public var trimmingOptionalWhitespace: Substring {
        let isSpace = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        let text = Substring(self)
        let bytes = text.utf8
        guard let first = bytes.firstIndex(where: { !isSpace($0) }), let last = bytes.lastIndex(where: { !isSpace($0) }) else { return "" }
        return text[first...last]
    }

    /// Whether `needle` occurs in the text, compared byte for byte. Once Foundation is imported, `contains` on two
    /// strings is Foundation's, which goes through `NSString` (about a microsecond for a short header value): this is
    /// what the request path asks of header values, addresses and markup instead.
    public func containsBytes(of needle: some StringProtocol) -> Bool {
        let bytes = utf8
        let needle = needle.utf8
        guard let first = needle.first else { return true }
        var start = bytes.startIndex
        while let found = bytes[start...].firstIndex(of: first) {
            if bytes[found...].starts(with: needle) { return true }
            start = bytes.index(after: found)
        }
        return false
    }
}
