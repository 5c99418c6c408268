import Foundation
import GatehouseCore
import Logging
import NIOConcurrencyHelpers

/// One JSON object per line on standard output (`log_format = json`): `time` (UTC, milliseconds), `level`,
/// `logger`, `message`, then the line's metadata as fields of their own. A line is written in one `write`, so lines
/// of concurrent requests never interleave.
public struct JSONLogHandler: LogHandler {
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    let label: String
    let write: @Sendable ([UInt8]) -> Void

    public init(label: String, level: Logger.Level, write: @escaping @Sendable ([UInt8]) -> Void = JSONLogHandler.standardOutput) {
        self.label = label
        self.logLevel = level
        self.write = write
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var fields = metadata
        if let provided = metadataProvider?.get() { fields.merge(provided) { _, new in new } }
        if let explicit = event.metadata { fields.merge(explicit) { _, new in new } }
        let level = event.level, message = event.message
        var out: [UInt8] = []
        out.reserveCapacity(256)
        out.append(contentsOf: #"{"time":""#.utf8)
        out.append(contentsOf: Self.timestamp(Date()).utf8)
        out.append(contentsOf: #"","level":"#.utf8)
        Self.appendString(level.rawValue, to: &out)
        out.append(contentsOf: #","logger":"#.utf8)
        Self.appendString(label, to: &out)
        out.append(contentsOf: #","message":"#.utf8)
        Self.appendString(message.description, to: &out)
        for key in fields.keys.sorted() where !Self.reserved.contains(key) {
            out.append(UInt8(ascii: ","))
            Self.appendString(key, to: &out)
            out.append(UInt8(ascii: ":"))
            Self.appendValue(fields[key]!, to: &out)
        }
        out.append(contentsOf: "}\n".utf8)
        write(out)
    }

    static let reserved: Set = ["time", "level", "logger", "message"]

    /// Lines go to standard output through `LogOutput.standard`: no event loop waits for a pipe or a journal.
    public static let standardOutput: @Sendable ([UInt8]) -> Void = { bytes in LogOutput.standard.append(bytes) }

    static func appendValue(_ value: Logger.Metadata.Value, to out: inout [UInt8]) {
        switch value {
        case .string(let string): appendString(string, to: &out)
        case .stringConvertible(let convertible): appendString(convertible.description, to: &out)
        case .array(let values):
            out.append(UInt8(ascii: "["))
            for (index, value) in values.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                appendValue(value, to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .dictionary(let dictionary):
            out.append(UInt8(ascii: "{"))
            for (index, key) in dictionary.keys.sorted().enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                appendString(key, to: &out)
                out.append(UInt8(ascii: ":"))
                appendValue(dictionary[key]!, to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// A JSON string: quotes, backslashes and control characters escaped (RFC 8259 §7), everything else as UTF-8.
    static func appendString(_ string: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: #"\""#.utf8)
            case UInt8(ascii: "\\"): out.append(contentsOf: #"\\"#.utf8)
            case UInt8(ascii: "\n"): out.append(contentsOf: #"\n"#.utf8)
            case UInt8(ascii: "\r"): out.append(contentsOf: #"\r"#.utf8)
            case UInt8(ascii: "\t"): out.append(contentsOf: #"\t"#.utf8)
            case 0..<0x20, 0x7F:
                out.append(contentsOf: #"\u00"#.utf8)
                out.appendHex(byte)
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    /// `2026-11-23T23:54:02.123Z`.
    static func timestamp(_ date: Date) -> String {
        var time = time_t(date.timeIntervalSince1970.rounded(.down))
        let milliseconds = Int((date.timeIntervalSince1970 - Double(time)) * 1000)
        var parts = tm()
        gmtime_r(&time, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let millis = milliseconds < 10 ? "00\(milliseconds)" : milliseconds < 100 ? "0\(milliseconds)" : "\(milliseconds)"
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T\(two(parts.tm_hour)):\(two(parts.tm_min)):"
            + "\(two(parts.tm_sec)).\(millis)Z"
    }
}

/// A file descriptor written by a thread of its own: a line is appended to a buffer under a lock (what an event loop
/// pays), and the thread writes whatever has gathered in one call. Lines keep their order; `flush` waits until all
/// appended so far are written (at exit). What a crash can lose: the lines appended in the last moment.
public final class LogOutput: @unchecked Sendable {
    public static let standard = LogOutput(fileDescriptor: 1)

    private let condition = NSCondition()
    /// Guarded by `condition`.
    private var pending: [UInt8] = []
    private var writing = false
    private var started = false
    private let fileDescriptor: Int32

    init(fileDescriptor: Int32) {
        self.fileDescriptor = fileDescriptor
    }

    public func append(_ bytes: [UInt8]) {
        condition.lock()
        pending.append(contentsOf: bytes)
        if !started {
            started = true
            let thread = Thread { [self] in run() }
            thread.name = "gatehouse-log"
            thread.start()
        }
        condition.broadcast()
        condition.unlock()
    }

    /// Returns once every line appended before it is written.
    public func flush() {
        condition.lock()
        while !pending.isEmpty || writing { condition.wait() }
        condition.unlock()
    }

    private func run() {
        while true {
            condition.lock()
            while pending.isEmpty { condition.wait() }
            let chunk = pending
            pending.removeAll(keepingCapacity: true)
            writing = true
            condition.unlock()
            Self.write(chunk, to: fileDescriptor)
            condition.lock()
            writing = false
            condition.broadcast()
            condition.unlock()
        }
    }

    static func write(_ bytes: [UInt8], to fileDescriptor: Int32) {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Foundation.write(fileDescriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return
                }
                offset += written
            }
        }
    }
}
