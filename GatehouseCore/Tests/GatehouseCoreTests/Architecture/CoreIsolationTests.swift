import Foundation
import Testing

/// The core stays free of the server stack: its sources import Foundation and swift-crypto, nothing else. Its
/// package's manifest already keeps other packages out of reach; this test keeps the rule if a dependency is ever
/// added there.
@Suite struct CoreIsolationTests {
    static let allowedImports: Set<String> = ["Foundation", "Crypto"]

    static var coreSources: URL {
        URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent()  // …/Tests/GatehouseCoreTests/Architecture
            .deletingLastPathComponent()  // …/Tests/GatehouseCoreTests
            .deletingLastPathComponent()  // …/Tests
            .deletingLastPathComponent()  // the GatehouseCore package
            .appendingPathComponent("Sources/GatehouseCore")
    }

    /// Every `import` of every Swift file under `folder`, with the file it is in.
    static func imports(under folder: URL) throws -> [(file: String, module: String)] {
        let files = try #require(FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil))
        var found: [(String, String)] = []
        for case let file as URL in files where file.pathExtension == "swift" {
            for line in try String(contentsOf: file, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: true) {
                let words = line.split(separator: " ")
                guard let index = words.firstIndex(of: "import"),
                    words[..<index].allSatisfy({ $0.hasPrefix("@") || $0 == "public" || $0 == "package" })
                else { continue }
                // `import struct Foundation.Date` and `import Foundation.NSData` name the module before the first dot.
                let target = words.dropFirst(index + 1).last {
                    !["struct", "class", "enum", "protocol", "func", "var", "let", "typealias"].contains($0)
                }
                if let module = target?.split(separator: ".").first { found.append((file.lastPathComponent, String(module))) }
            }
        }
        return found
    }

    @Test func coreSourcesImportNothingOfTheServerStack() throws {
        let imports = try Self.imports(under: Self.coreSources)
        #expect(imports.count >= 10, "the core's sources were not found at \(Self.coreSources.path)")
        let forbidden = imports.filter { !Self.allowedImports.contains($0.module) }
        #expect(forbidden.isEmpty, "\(forbidden.map { "\($0.file) imports \($0.module)" })")
    }

    @Test func theCheckSeesEveryKindOfImport() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("core-isolation-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try """
        import Foundation
        @preconcurrency import NIOCore
        import struct Hummingbird.Request
        @_exported import AsyncHTTPClient
        // import PostgresNIO is only a comment's text when it does not start the line
        let text = "import SQLiteNIO"
        """.write(to: folder.appendingPathComponent("Sample.swift"), atomically: true, encoding: .utf8)
        let modules = try Self.imports(under: folder).map(\.module)
        #expect(modules == ["Foundation", "NIOCore", "Hummingbird", "AsyncHTTPClient"])
    }
}
