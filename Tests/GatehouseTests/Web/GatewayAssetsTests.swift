import CompressNIO
import Foundation
import GatehouseCore
import HTTPTypes
import HummingbirdTesting
import Logging
import NIOCore
import Testing

@testable import Gatehouse

/// The gateway's own files: prepared once, named by their hash, cached for a year under that name, gzipped for
/// browsers that take it, revalidated by tag under their plain name, and nothing else under `/static`.
@Suite struct GatewayAssetsTests {
    static func withApplication(_ body: @escaping @Sendable (any TestClientProtocol, PageRenderer) async throws -> Void) async throws {
        let configuration = try LiveGateway.developmentConfiguration(port: 8080)
        var logger = Logger(label: "assets-test")
        logger.logLevel = .warning
        let built = try await GatehouseApplication.build(configuration: configuration, logger: logger)
        // The same files give the same names: a renderer of its own names what the application serves.
        let renderer = try await PageRenderer.load(configuration: configuration)
        try await built.application.test(.router) { client in try await body(client, renderer) }
    }

    @Test func namesCarryTheHashOfTheBytes() throws {
        let one = try GatewayAssets(files: [("/a.css", Array("body{}".utf8)), ("/icons/wiki.svg", Array("<svg/>".utf8)), ("/LICENSE", [1])])
        let other = try GatewayAssets(files: [("/a.css", Array("body{color:red}".utf8))])
        #expect(one.url(for: "/static/a.css").wholeMatch(of: /\/static\/a\.[0-9a-f]{10}\.css/) != nil)
        #expect(one.url(for: "/static/a.css") != other.url(for: "/static/a.css"))
        #expect(one.url(for: "/static/icons/wiki.svg").hasPrefix("/static/icons/wiki."))
        #expect(one.url(for: "/static/LICENSE").wholeMatch(of: /\/static\/LICENSE\.[0-9a-f]{10}/) != nil)
        #expect(one.url(for: "/static/missing.js") == "/static/missing.js")
        #expect(one.templateNames["icons_wiki_svg"] == one.url(for: "/static/icons/wiki.svg"))
    }

    @Test func hashedNamesAreKeptForAYearPlainNamesRevalidated() async throws {
        try await Self.withApplication { client, renderer in
            let hashed = renderer.assets.url(for: Paths.barScript)
            #expect(hashed != Paths.barScript)
            var tag = ""
            try await client.execute(uri: hashed, method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.cacheControl] == "public, max-age=31536000, immutable")
                #expect(
                    response.headers[.contentType]?.hasPrefix("text/javascript") == true
                        || response.headers[.contentType]?.hasPrefix("application/javascript") == true)
                #expect(response.headers[.contentEncoding] == nil && String(buffer: response.body).contains("gatehouse-bar"))
                tag = response.headers[.eTag] ?? ""
            }
            try await client.execute(uri: Paths.barScript, method: .get) { response in
                #expect(response.status == .ok && response.headers[.cacheControl] == "no-cache" && response.headers[.eTag] == tag)
            }
            for ifNoneMatch in [tag, "W/" + tag, "\"other\", " + tag, "*"] {
                try await client.execute(uri: Paths.barScript, method: .get, headers: [.ifNoneMatch: ifNoneMatch]) { response in
                    #expect(response.status == .notModified && response.body.readableBytes == 0, "\(ifNoneMatch)")
                }
            }
            try await client.execute(uri: Paths.barScript, method: .get, headers: [.ifNoneMatch: "\"stale\""]) { #expect($0.status == .ok) }
        }
    }

    @Test func gzippedOnceForBrowsersThatTakeIt() async throws {
        try await Self.withApplication { client, renderer in
            let style = renderer.assets.url(for: "/static/gatehouse.css")
            var plain = ByteBuffer()
            try await client.execute(uri: style, method: .get, headers: [.acceptEncoding: "identity"]) { response in
                #expect(response.headers[.contentEncoding] == nil && response.headers[.vary] == "Accept-Encoding")
                plain = response.body
            }
            for accept in ["gzip, deflate, br", "br, *", "GZIP;q=0.5"] {
                try await client.execute(uri: style, method: .get, headers: [.acceptEncoding: accept]) { response in
                    #expect(response.headers[.contentEncoding] == "gzip", "\(accept)")
                    #expect(response.headers[.contentLength] == "\(response.body.readableBytes)")
                    var body = response.body
                    #expect(body.readableBytes * 3 < plain.readableBytes)
                    let inflated = try body.decompress(with: .gzip())
                    #expect(inflated == plain)
                }
            }
            try await client.execute(uri: style, method: .get, headers: [.acceptEncoding: "gzip;q=0, br"]) { response in
                #expect(response.headers[.contentEncoding] == nil)
            }
            try await client.execute(uri: style, method: .head, headers: [.acceptEncoding: "gzip"]) { response in
                #expect(response.status == .ok && response.body.readableBytes == 0 && response.headers[.contentEncoding] == "gzip")
            }
        }
    }

    /// Browsers ask `/favicon.ico` of every page that names no icon, an app's page on a path mount included (the
    /// gateway's origin): the gateway's own icon, not a 404 in every app page's console.
    @Test func theIconIsServedWhereBrowsersLookForIt() async throws {
        try await Self.withApplication { client, renderer in
            let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47]
            try await client.execute(uri: Paths.favicon, method: .get) { response in
                #expect(response.status == .ok && response.headers[.contentType] == "image/png")
                #expect(response.headers[.cacheControl] == "public, max-age=86400")
                #expect(Array(response.body.readableBytesView.prefix(4)) == png)
            }
            #expect(renderer.assets.url(for: Paths.faviconAsset) != Paths.faviconAsset)
        }
    }

    @Test func nothingElseIsServedUnderStatic() async throws {
        try await Self.withApplication { client, _ in
            let hostile = [
                "/static/../Package.swift", "/static/%2e%2e/Package.swift", "/static/", "/static/gatehouse.css/", "/static//gatehouse.css",
                "/static/gatehouse.0000000000.css", "/static/.hidden", "/static/gatehouse.css%00.js",
            ]
            for path in hostile {
                try await client.execute(uri: path, method: .get) { response in
                    #expect(response.status == .notFound, "\(path)")
                    #expect(!String(buffer: response.body).contains("prefers-color-scheme"), "\(path)")
                }
            }
            try await client.execute(uri: "/static/gatehouse.css", method: .post) { response in
                #expect(response.status == .methodNotAllowed && response.headers[.allow] == "GET, HEAD")
            }
        }
    }

    @Test func pagesNameTheHashedFiles() async throws {
        try await Self.withApplication { client, renderer in
            try await client.execute(uri: "/signin", method: .get) { response in
                let page = String(buffer: response.body)
                for file in ["/static/gatehouse.css", "/static/gatehouse.js", Paths.toastsScript] {
                    #expect(page.contains("\"\(renderer.assets.url(for: file))\""), "\(file)")
                    #expect(!page.contains("\"\(file)\""), "\(file)")
                }
            }
        }
    }
}
