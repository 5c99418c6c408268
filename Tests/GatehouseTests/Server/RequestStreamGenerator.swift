/// Byte streams of HTTP/1.1 requests, right and wrong in every part the framing reads, from a seed: the
/// differential tests give the same streams to `HTTP1RequestReader` and to the oracle it replaced.
struct RequestStreamGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    /// SplitMix64.
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
    mutating func chance(_ percent: Int) -> Bool { below(100) < percent }
    mutating func pick<T>(_ options: [T]) -> T { options[below(options.count)] }

    /// One to three requests, one after the other on a connection, sometimes after empty lines.
    mutating func stream() -> [UInt8] {
        var bytes: [UInt8] = []
        for _ in 0..<(1 + below(3)) {
            if chance(5) { bytes += Array("\r\n".utf8) }
            bytes += request()
        }
        return bytes
    }

    /// Split points: none, a few, or every byte.
    mutating func split(_ bytes: [UInt8]) -> [[UInt8]] {
        switch below(10) {
        case 0: return bytes.map { [$0] }
        case 1...4: return [bytes]
        default:
            var chunks: [[UInt8]] = []
            var start = 0
            while start < bytes.count {
                let end = min(bytes.count, start + 1 + below(max(1, bytes.count / 3)))
                chunks.append(Array(bytes[start..<end]))
                start = end
            }
            return chunks
        }
    }

    mutating func request() -> [UInt8] {
        let method = chance(96) ? pick(["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"]) : pick(["BREW", "get", "G ET", "", "M-SEARCH", "CONNECT", "PRI", "QUERY", "GET\t"])
        let target = chance(94) ? pick(["/", "/apps/wiki/page?x=1", "/a%20b", "/a/../b", "*", "http://example.test/x"]) : pick(["", "/a b", "/\u{7F}", "/é", "/\t", "/a#frag", "//x", String(repeating: "/a", count: 5_000)])
        let version = chance(96) ? pick(["HTTP/1.1", "HTTP/1.0"]) : pick(["HTTP/1.2", "HTTP/2.0", "http/1.1", "HTTP/1.1 ", "HTTP/0.9", "HTTP/11", ""])
        var lines = ["\(method) \(target) \(version)"]
        var body: [UInt8] = []
        var fields: [String] = []
        if chance(96) { fields.append("Host: " + (chance(95) ? pick(["a", "gateway.test", "a:8080", "[::1]:1"]) : pick(["", "a b", "user@a", "a:", "a:x", "é"]))) }
        if chance(5) { fields.append("Host: b") }
        let framing = below(10)
        var length: Int?
        var chunked = false
        switch framing {
        case 0...3: break
        case 4...6:
            length = below(40)
            fields.append("Content-Length: " + (chance(90) ? "\(length!)" : pick(["-1", "\(length!), \(length!)", "0\(length!)", " \(length!) ", "1e3", "", "99999999999999999999"])))
            if chance(5) { fields.append("Content-Length: \(length!)") }
        default:
            chunked = true
            fields.append("Transfer-Encoding: " + (chance(85) ? pick(["chunked", "CHUNKED", "Chunked"]) : pick(["gzip, chunked", "chunked, gzip", "identity", " chunked", "chunked,", ", chunked", "chunked, chunked"])))
            if chance(5) { fields.append("Content-Length: 3") }
        }
        for _ in 0..<below(6) { fields.append(field()) }
        if chance(10) { fields.append(contentsOf: ["Connection: Upgrade", "Upgrade: websocket"].shuffled(using: &self)) }
        if chance(3) { fields.append(contentsOf: (0..<300).map { "X-\($0): v" }) }
        if chance(3) { fields.append("X-Big: " + String(repeating: "b", count: 40_000)) }
        fields.shuffle(using: &self)
        lines += fields
        if let length {
            body = Array(repeating: UInt8(ascii: "x"), count: chance(90) ? length : max(0, length - 1))
        } else if chunked {
            body = chunkedBody()
        }
        let end = chance(98) ? "\r\n" : pick(["\n", "\r", "\r\r\n", " \r\n"])
        return Array((lines.joined(separator: chance(97) ? "\r\n" : pick(["\n", "\r\n ", "\r"])) + "\r\n" + end).utf8) + body
    }

    mutating func field() -> String {
        let name = chance(97) ? pick(["X-A", "Accept", "cookie", "Sec-Fetch-Dest", "x_under", "Expect", "Connection"]) : pick(["", "X A", "X-A ", "a(b", "é", " X-A", "X-A\t"])
        var value = chance(80) ? pick(["b", "a=1; b=2", "keep-alive", "close", "100-continue", "", " spaced ", "\tt"]) : ""
        if value.isEmpty, chance(30) {
            for _ in 0..<below(8) { value += String(decoding: [pick([0x00, 0x01, 0x09, 0x0B, 0x20, 0x41, 0x7F, 0x80, 0xC3, 0xA9, 0xFF])], as: Unicode.ASCII.self) }
        }
        return "\(name):\(chance(90) ? " " : "")\(value)"
    }

    mutating func chunkedBody() -> [UInt8] {
        var text = ""
        for _ in 0..<below(3) {
            let size = 1 + below(20)
            let sizeText = chance(90) ? String(size, radix: 16, uppercase: chance(50)) : pick(["zz", "-1", "0x1", " 1", "ffffffffffffffffff"])
            let ext = chance(80) ? "" : pick([";a", ";a=b", ";a=\"q d\"", "; a = b", ";=", ";a=\"open", ";a=b c", " ;a"])
            text += sizeText + ext + "\r\n" + String(repeating: "y", count: size) + (chance(95) ? "\r\n" : pick(["", "\n", "xx"]))
        }
        text += "0\r\n"
        if chance(20) { text += pick(["X-T: 1\r\n", "X-T 1\r\n", " X-T: 1\r\n"]) }
        text += "\r\n"
        return Array(text.utf8)
    }
}

extension RequestStreamGenerator: RandomNumberGenerator {}
