import Foundation
import Logging
import NIOConcurrencyHelpers
import Testing

@testable import Gatehouse

@Suite struct JSONLogHandlerTests {
    /// A logger whose lines land in memory.
    static func capture(level: Logger.Level = .info) -> (Logger, NIOLockedValueBox<[[UInt8]]>) {
        let lines = NIOLockedValueBox<[[UInt8]]>([])
        let logger = Logger(label: "gatehouse") { label in
            JSONLogHandler(label: label, level: level) { bytes in lines.withLockedValue { $0.append(bytes) } }
        }
        return (logger, lines)
    }

    @Test func everyLineIsOneJSONObjectWhateverTheValuesHold() throws {
        var (logger, lines) = Self.capture()
        logger[metadataKey: "hb.request.id"] = "abc"
        let hostile = "quote \" backslash \\ newline \n tab \t bell \u{07} delete \u{7F} é ✓ \u{2028}"
        logger.info(
            "message with \"quotes\"\nand a second line",
            metadata: [
                "text": .string(hostile), "number": .stringConvertible(42), "list": .array([.string("a"), .dictionary(["k": .string("v")])]),
                "level": .string("forged"), "message": .string("forged"),
            ])
        logger.debug("below the level")
        let written = lines.withLockedValue { $0 }
        #expect(written.count == 1)
        let line = try #require(written.first)
        #expect(line.last == UInt8(ascii: "\n"))
        #expect(line.dropLast().allSatisfy { $0 != UInt8(ascii: "\n") })
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any])
        #expect(object["message"] as? String == "message with \"quotes\"\nand a second line")
        #expect(object["level"] as? String == "info")
        #expect(object["logger"] as? String == "gatehouse")
        #expect(object["text"] as? String == hostile)
        #expect(object["number"] as? String == "42")
        #expect(object["hb.request.id"] as? String == "abc")
        #expect((object["list"] as? [Any])?.count == 2)
        let time = try #require(object["time"] as? String)
        #expect(time.count == 24 && time.hasSuffix("Z"))
        #expect(ISO8601DateFormatter.withFractionalSeconds.date(from: time) != nil)
    }

    @Test func timestampsAreUTCWithMilliseconds() {
        #expect(JSONLogHandler.timestamp(Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00.000Z")
        #expect(JSONLogHandler.timestamp(Date(timeIntervalSince1970: 1_795_478_042.5)) == "2026-11-23T23:54:02.500Z")
    }

    /// Lines from several threads at once reach the file whole and in each thread's order, all of them once `flush`
    /// returns.
    @Test func theLogsWriterThreadKeepsEveryLineWholeAndInOrder() async throws {
        var descriptors: [Int32] = [0, 0]
        #expect(pipe(&descriptors) == 0)
        let (readEnd, writeEnd) = (descriptors[0], descriptors[1])
        let output = LogOutput(fileDescriptor: writeEnd)
        let reader = Task.detached { () -> String in
            var data = Data()
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let count = read(readEnd, &buffer, buffer.count)
                if count <= 0 { break }
                data.append(contentsOf: buffer[0..<count])
            }
            return String(decoding: data, as: UTF8.self)
        }
        await withTaskGroup(of: Void.self) { group in
            for writer in 0..<4 {
                group.addTask {
                    for line in 0..<2_000 { output.append(Array("writer \(writer) line \(line)\n".utf8)) }
                }
            }
        }
        output.flush()
        close(writeEnd)
        let lines = await reader.value.split(separator: "\n")
        #expect(lines.count == 8_000)
        for writer in 0..<4 {
            let own = lines.filter { $0.hasPrefix("writer \(writer) ") }
            #expect(own == (0..<2_000).map { "writer \(writer) line \($0)"[...] })
        }
        close(readEnd)
    }

    /// A reload's `log_level` reaches every logger at once; a logger given a level of its own keeps it.
    @Test func loggersFollowTheSettingUnlessGivenALevelOfTheirOwn() {
        let setting = LogLevelSetting(.info)
        for level in Logger.Level.allCases {
            setting.level = level
            #expect(setting.level == level)
        }
        let lines = NIOLockedValueBox<[String]>([])
        var following = Logger(label: "test") { label in
            FollowingLevel(JSONLogHandler(label: label, level: .trace) { bytes in lines.withLockedValue { $0.append(String(decoding: bytes, as: UTF8.self)) } }, setting: setting)
        }
        setting.level = .warning
        following.info("hidden")
        setting.level = .debug
        following.info("shown")
        following.logLevel = .error
        following.warning("hidden too")
        setting.level = .trace
        following.error("shown too")
        #expect(lines.withLockedValue { $0 }.map { $0.contains("shown") } == [true, true])
        #expect(lines.withLockedValue { $0 }.count == 2)
    }
}
