/// Bytes read as ASCII text.
extension UInt8 {
    /// `0-9`, `a-f`, `A-F`.
    var isHexDigit: Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(self)
            || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(self)
    }

    /// `A-Z` as `a-z`, every other byte as it is.
    var asciiLowercased: UInt8 { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(self) ? self | 0x20 : self }
}
