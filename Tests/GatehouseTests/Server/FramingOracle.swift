import GatehouseCore
import NIOHTTP1

@testable import Gatehouse

/// How the gateway framed HTTP/1.1 requests before it read them itself: NIO's `HTTPRequestDecoder` (llhttp), then
/// the checks RFC 9112 adds to what that decoder accepts. The differential tests hold `HTTP1RequestReader` to it.
enum FramingOracle {
    /// The status NIO's parse errors were answered with.
    static func status(for error: HTTPParserError) -> HTTPResponseStatus {
        switch error {
        case .headerOverflow: .requestHeaderFieldsTooLarge
        case .invalidMethod: .notImplemented
        default: .badRequest
        }
    }

    /// The status a head NIO accepted must be refused with, or `nil` when it is fine.
    static func problem(with head: HTTPRequestHead, maximumTargetBytes: Int) -> HTTPResponseStatus? {
        if head.uri.utf8.count > maximumTargetBytes { return .uriTooLong }
        let hosts = head.headers["Host"]
        if head.version.minor >= 1 || !hosts.isEmpty {
            guard hosts.count == 1, isValidHost(hosts[0]) else { return .badRequest }
        }
        let lengths = head.headers["Content-Length"]
        let codings = head.headers["Transfer-Encoding"]
        if lengths.count > 1 { return .badRequest }
        if let length = lengths.first, !(1...15).contains(length.utf8.count) || !length.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
            return .badRequest
        }
        if !codings.isEmpty {
            if !lengths.isEmpty || head.version.minor == 0 { return .badRequest }
            let list = codings.flatMap { $0.split(separator: ",", omittingEmptySubsequences: false) }
                .map { $0.trimmingOptionalWhitespace.lowercased() }
            guard list.last == "chunked" else { return .badRequest }
            if list.count > 1 { return list.dropLast().contains("chunked") || list.contains("") ? .badRequest : .notImplemented }
        }
        return nil
    }

    /// `uri-host [ ":" port ]` (RFC 9110 §7.2), written apart from the reader's on purpose.
    static func isValidHost(_ value: String) -> Bool {
        var host = Substring(value)
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { return false }
            let literal = host[host.index(after: host.startIndex)..<close]
            guard !literal.isEmpty, literal.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else { return false }
            host = host[host.index(after: close)...]
            if host.isEmpty { return true }
            guard host.first == ":" else { return false }
            return isPort(host.dropFirst())
        }
        if let colon = host.lastIndex(of: ":") {
            guard isPort(host[host.index(after: colon)...]) else { return false }
            host = host[..<colon]
        }
        guard !host.isEmpty, host.utf8.count <= 253 else { return false }
        return host.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "-._".unicodeScalars.contains($0)) }
    }

    static func isPort(_ text: Substring) -> Bool {
        (1...5).contains(text.utf8.count) && text.utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }
}
